"""What the log cleaner writes (``rebuild_batch``) and how readers move past it."""

from __future__ import annotations

from kafka.record.memory_records import MemoryRecords

from minikafka.proto.records import (
    Compression,
    Record,
    RecordsReader,
    decode_batch,
    encode_batch,
    rebuild_batch,
    validate_batch,
)

T0 = 1_700_000_000_000


def _batch(compression: Compression = Compression.NONE) -> bytes:
    return encode_batch(
        [(T0 + i, b"k%d" % i, b"v%d" % i if i != 3 else None, ()) for i in range(5)],
        base_offset=100,
        compression=compression,
        producer_id=7,
        producer_epoch=1,
        base_sequence=40,
        partition_leader_epoch=3,
    )


def test_a_rebuilt_batch_keeps_offsets_sequence_and_codec() -> None:
    header, records = decode_batch(_batch(Compression.GZIP))
    kept = [records[1], records[3]]
    data = rebuild_batch(header, kept, delete_horizon_ms=T0 + 86_400_000)
    new = validate_batch(data)  # the CRC holds
    assert (new.base_offset, new.last_offset, new.record_count) == (100, 104, 2)
    assert (new.producer_id, new.producer_epoch, new.last_sequence) == (7, 1, 44)
    assert new.partition_leader_epoch == 3 and new.compression is Compression.GZIP
    assert new.delete_horizon_ms == T0 + 86_400_000
    assert decode_batch(data)[1] == kept
    # An independent decoder reads it the same way.
    theirs = list(MemoryRecords(data).next_batch())
    assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == [
        (r.offset, r.timestamp, r.key, r.value) for r in kept
    ]


def test_an_emptied_batch_still_covers_its_offsets() -> None:
    header, _ = decode_batch(_batch(Compression.LZ4))
    empty = rebuild_batch(header, [])
    new = validate_batch(empty)
    assert (new.base_offset, new.last_offset, new.record_count) == (100, 104, 0)
    assert new.compression is Compression.NONE and new.last_sequence == 44
    assert decode_batch(empty)[1] == []


def test_readers_move_past_emptied_batches() -> None:
    header, _ = decode_batch(_batch())
    data = rebuild_batch(header, []) + encode_batch([(T0, b"k", b"v", ())], base_offset=110)
    reader = RecordsReader(data, Record, from_offset=101)
    assert [r.offset for r in reader.read(10)] == [110]
    assert reader.exhausted and reader.next_offset == 111
    only_empty = RecordsReader(rebuild_batch(header, []), Record, from_offset=101)
    assert only_empty.exhausted and only_empty.read(10) == []
    assert only_empty.next_offset == 105
