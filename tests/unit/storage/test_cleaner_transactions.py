"""The cleaner and transactions (Kafka's CleanedTransactionMetadata): an aborted transaction's
records go whatever their keys (and never hide a committed record of their key), a marker stays
while its transaction still has batches and then for delete.retention.ms, the cleaned segment
keeps the ``.txnindex`` entries of the markers it keeps, and the cleaning stops at the LSO."""

from __future__ import annotations

from pathlib import Path

from minikafka.broker.storage.cleaner import CleanerConfig, LogCleaner, clean_log, plan_cleaning
from minikafka.broker.storage.log import Log
from minikafka.broker.storage.txn_index import AbortedTxn
from minikafka.proto.records import (
    ControlType,
    decode_batch,
    encode_batch,
    encode_end_txn_marker,
    iter_batch_headers,
)
from tests.unit.storage.helpers import T0, Clock, read_all, small_config

DAY_MS = 24 * 60 * 60 * 1000


def _log(tmp_path: Path, clock: Clock) -> Log:
    config = small_config(cleanup_policy=frozenset({"compact"}), segment_bytes=4096)
    return Log(tmp_path / "t-0", config, time_ms=clock)


def _append(log: Log, key: bytes, value: bytes, pid: int = -1, seq: int = -1) -> int:
    data = encode_batch(
        [(T0, key, value, ())],
        is_transactional=pid >= 0,
        producer_id=pid,
        producer_epoch=0 if pid >= 0 else -1,
        base_sequence=seq,
    )
    return log.append_as_leader(data, 0).first_offset


def _marker(log: Log, pid: int, control_type: ControlType) -> int:
    data = encode_end_txn_marker(pid, 0, 0, control_type, T0)
    return log.append_as_leader(data, 0, allow_control=True).first_offset


def _again(cleaner: LogCleaner, log: Log) -> None:
    """A later cleaning: new dirty data first (a log is cleaned again only when dirty)."""
    _append(log, b"x", b"more")
    log.roll()
    assert clean_log(cleaner, log, force=True) is not None


def _batches(log: Log) -> list[tuple[int, bool, int, int | None]]:
    """(base offset, is control, record count, delete horizon) of every batch."""
    return [
        (h.base_offset, h.is_control, h.record_count, h.delete_horizon_ms)
        for _, h in iter_batch_headers(read_all(log))
    ]


def _values(log: Log) -> dict[bytes, bytes | None]:
    data = read_all(log)
    out: dict[bytes, bytes | None] = {}
    for position, header in iter_batch_headers(data):
        if not header.is_control:
            for record in decode_batch(data, position)[1]:
                assert record.key is not None
                out[record.key] = record.value
    return out


def test_aborted_records_go_and_markers_wait_out_the_delete_horizon(tmp_path: Path) -> None:
    clock = Clock()
    log = _log(tmp_path, clock)
    _append(log, b"a", b"committed", pid=1, seq=0)  # 0
    commit = _marker(log, 1, ControlType.COMMIT)  # 1
    first = _append(log, b"a", b"aborted", pid=2, seq=0)  # 2: must not hide offset 0
    _append(log, b"b", b"aborted", pid=2, seq=1)  # 3
    abort = _marker(log, 2, ControlType.ABORT)  # 4
    log.active_segment.append_aborted_txn(AbortedTxn(2, first, abort, abort + 1))
    _append(log, b"c", b"plain")  # 5
    log.roll()
    _append(log, b"d", b"active")  # 6, in the active segment: never cleaned
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)

    assert clean_log(cleaner, log, force=True) is not None
    assert _values(log) == {b"a": b"committed", b"c": b"plain", b"d": b"active"}
    # both markers stay: a batch of each transaction was read in this cleaning
    assert [(o, n, h) for o, c, n, h in _batches(log) if c] == [(commit, 1, None), (abort, 1, None)]
    cleaned = log.segments[0]
    assert cleaned.txn_index.entries == [AbortedTxn(2, first, abort, abort + 1)]

    _again(cleaner, log)
    # nothing of the aborted transaction is left: its marker gets its delete horizon; the
    # committed one still has its record
    horizon = clock() + log.config.delete_retention_ms
    assert [(o, n, h) for o, c, n, h in _batches(log) if c] == [
        (commit, 1, None),
        (abort, 1, horizon),
    ]
    assert log.segments[0].txn_index.entries == []
    assert not log.segments[0].txn_index.path.exists()

    clock.advance(log.config.delete_retention_ms - 1)
    _again(cleaner, log)
    assert abort in [o for o, c, _, _ in _batches(log) if c]  # not yet
    clock.advance(1)
    _again(cleaner, log)
    assert abort not in [o for o, c, _, _ in _batches(log) if c]
    assert _values(log) == {b"a": b"committed", b"c": b"plain", b"d": b"active", b"x": b"more"}


def test_a_commit_marker_goes_once_its_records_are_compacted_away(tmp_path: Path) -> None:
    clock = Clock()
    log = _log(tmp_path, clock)
    _append(log, b"a", b"old", pid=1, seq=0)  # 0
    commit = _marker(log, 1, ControlType.COMMIT)  # 1
    _append(log, b"a", b"new")  # 2: replaces the transaction's only record
    _append(log, b"z", b"last")  # 3
    log.roll()
    _append(log, b"d", b"active")
    cleaner = LogCleaner(CleanerConfig(), time_ms=clock)
    clean_log(cleaner, log, force=True)  # the batch was read in this cleaning: marker kept
    assert [h for o, c, _, h in _batches(log) if o == commit] == [None]
    _again(cleaner, log)
    assert [h for o, c, _, h in _batches(log) if o == commit] == [
        clock() + log.config.delete_retention_ms
    ]


def test_the_cleaning_stops_at_the_last_stable_offset(tmp_path: Path) -> None:
    clock = Clock()
    log = _log(tmp_path, clock)
    _append(log, b"a", b"1")
    log.roll()
    open_at = _append(log, b"a", b"2", pid=5, seq=0)  # an open transaction
    log.roll()
    _append(log, b"a", b"3")
    log.roll()
    kwargs = {"first_dirty_offset": 0, "now_ms": clock()}
    plan, _ = plan_cleaning(log, **kwargs, last_stable_offset=open_at)  # type: ignore[arg-type]
    assert plan is not None and plan.first_uncleanable_offset == open_at
    plan, _ = plan_cleaning(log, **kwargs)  # type: ignore[arg-type]
    assert plan is not None and plan.first_uncleanable_offset > open_at
