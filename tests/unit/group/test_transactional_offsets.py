"""TxnOffsetCommit on the group coordinator (KIP-98, KIP-447): offsets pending per producer
until the marker of its transaction, on a fake clock and an in-memory __consumer_offsets."""

from __future__ import annotations

import asyncio

from minikafka.broker.group.group_metadata import GroupState
from minikafka.proto.common import OffsetAndMetadata
from minikafka.proto.consumer_offsets import (
    decode_offset_value,
    encode_offset_key,
)
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import (
    ControlType,
    assign_offsets,
    decode_batch,
    encode_end_txn_marker,
    iter_batch_headers,
)
from tests.unit.group.test_coordinator import FakeOffsetsLog, Harness, _settle, run

TP = ("t", 0)
PID = 4000
EPOCH = 3


def append_marker(log: FakeOffsetsLog, producer_id: int, committed: bool) -> None:
    """What WriteTxnMarkers appends to __consumer_offsets-0: a COMMIT or ABORT marker."""
    control_type = ControlType.COMMIT if committed else ControlType.ABORT
    marker = encode_end_txn_marker(producer_id, EPOCH, 7, control_type, 0)
    data, _ = assign_offsets(marker, log.log_end_offset(0), 0, allow_control=True)
    log.logs.setdefault(0, bytearray()).extend(data)


async def txn_commit(
    h: Harness,
    offsets: dict[tuple[str, int], OffsetAndMetadata],
    *,
    producer_id: int = PID,
    member_id: str = "",
    generation_id: int = -1,
    group_instance_id: str | None = None,
) -> dict[tuple[str, int], ErrorCode]:
    return await h.coordinator.txn_offset_commit(
        "g",
        "txn-1",
        producer_id,
        EPOCH,
        offsets,
        member_id=member_id,
        generation_id=generation_id,
        group_instance_id=group_instance_id,
    )


def stable_fetch(
    h: Harness, *partitions: tuple[str, int]
) -> tuple[dict[tuple[str, int], int | None], dict[tuple[str, int], ErrorCode]]:
    """OffsetFetch with require_stable: (each partition's offset or None, the errors)."""
    code, offsets, errors = h.coordinator.fetch_offsets("g", list(partitions), require_stable=True)
    assert code == ErrorCode.NONE
    return {tp: None if o is None else o.offset for tp, o in offsets.items()}, errors


def committed(h: Harness, tp: tuple[str, int] = TP) -> int | None:
    found = h.coordinator.fetch_offsets("g", [tp])[1][tp]
    return None if found is None else found.offset


def test_offsets_are_visible_only_once_the_commit_marker_is_written() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        await h.coordinator.commit_offsets("g", "", -1, {TP: OffsetAndMetadata(3)})
        assert await txn_commit(h, {TP: OffsetAndMetadata(10, "m")}) == {TP: ErrorCode.NONE}
        assert committed(h) == 3  # read_uncommitted view: the old offset
        assert stable_fetch(h, TP, ("t", 1)) == (
            {TP: None, ("t", 1): None},
            {TP: ErrorCode.UNSTABLE_OFFSET_COMMIT},
        )
        # require_stable False: the third part is there, and empty
        assert h.coordinator.fetch_offsets("g", [TP], require_stable=False)[2] == {}
        h.coordinator.complete_transactional_offsets(0, PID, committed=True)
        assert committed(h) == 10
        assert stable_fetch(h, TP) == ({TP: 10}, {})

    run(scenario)


def test_aborted_offsets_are_never_visible() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        await h.coordinator.commit_offsets("g", "", -1, {TP: OffsetAndMetadata(3)})
        await txn_commit(h, {TP: OffsetAndMetadata(10)})
        h.coordinator.complete_transactional_offsets(0, PID, committed=False)
        assert committed(h) == 3
        assert stable_fetch(h, TP) == ({TP: 3}, {})
        # a marker of another producer, or of an unled partition, changes nothing
        await txn_commit(h, {TP: OffsetAndMetadata(11)})
        h.coordinator.complete_transactional_offsets(0, PID + 1, committed=True)
        h.coordinator.complete_transactional_offsets(5, PID, committed=True)
        assert committed(h) == 3
        assert stable_fetch(h, TP)[1] == {TP: ErrorCode.UNSTABLE_OFFSET_COMMIT}

    run(scenario)


def test_the_offsets_go_as_one_transactional_batch_of_the_producer() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        offsets = {TP: OffsetAndMetadata(10, "a"), ("t", 1): OffsetAndMetadata(20, "b")}
        await txn_commit(h, offsets)
        data = bytes(h.log.logs[0])
        [(pos, header)] = list(iter_batch_headers(data))
        assert header.is_transactional and not header.is_control
        assert (header.producer_id, header.producer_epoch) == (PID, EPOCH)
        assert header.base_sequence == 0
        _, records = decode_batch(data, pos)
        assert [r.key for r in records] == [
            encode_offset_key("g", "t", 0),
            encode_offset_key("g", "t", 1),
        ]
        assert [decode_offset_value(r.value or b"").offset for r in records] == [10, 20]
        assert h.log.transactional_ids == ["txn-1"]
        # a plain commit is a plain batch
        await h.coordinator.commit_offsets("g", "", -1, {TP: OffsetAndMetadata(1)})
        last = list(iter_batch_headers(bytes(h.log.logs[0])))[-1][1]
        assert not last.is_transactional and last.producer_id == -1
        assert h.log.transactional_ids == ["txn-1", None]

    run(scenario)


def test_member_and_generation_are_checked_when_given() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        # an unknown group with a generation: no such member, and no group made for it
        assert await txn_commit(h, {TP: OffsetAndMetadata(1)}, generation_id=1) == {
            TP: ErrorCode.UNKNOWN_MEMBER_ID
        }
        assert h.coordinator.describe_group("g") == (ErrorCode.NONE, None)
        (a,), generation = await h.stable_group(1)
        unknown_instance = await txn_commit(
            h,
            {TP: OffsetAndMetadata(1)},
            member_id=a,
            generation_id=generation,
            group_instance_id="i",
        )
        assert unknown_instance == {TP: ErrorCode.UNKNOWN_MEMBER_ID}  # no static member "i"
        assert await txn_commit(
            h, {TP: OffsetAndMetadata(1)}, member_id="nobody", generation_id=generation
        ) == {TP: ErrorCode.UNKNOWN_MEMBER_ID}
        assert await txn_commit(
            h, {TP: OffsetAndMetadata(1)}, member_id=a, generation_id=generation + 1
        ) == {TP: ErrorCode.ILLEGAL_GENERATION}
        assert await txn_commit(
            h, {TP: OffsetAndMetadata(2)}, member_id=a, generation_id=generation
        ) == {TP: ErrorCode.NONE}
        # older clients name no member: taken whatever the group's state (KIP-447 is opt-in)
        assert await txn_commit(h, {TP: OffsetAndMetadata(3)}) == {TP: ErrorCode.NONE}
        assert h.state() is GroupState.STABLE

    run(scenario)


def test_a_fenced_static_member_and_a_large_metadata() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        joining = h.join(group_instance_id="i", protocols=[("range", b"")])
        await h.timers.advance(0)
        first = await joining
        again = await h.join(group_instance_id="i", protocols=[("range", b"")])
        assert again.member_id != first.member_id
        assert await txn_commit(
            h,
            {TP: OffsetAndMetadata(1)},
            member_id=first.member_id,
            generation_id=first.generation_id,
            group_instance_id="i",
        ) == {TP: ErrorCode.FENCED_INSTANCE_ID}
        big = OffsetAndMetadata(5, "x" * 5000)
        assert await txn_commit(h, {TP: big, ("t", 1): OffsetAndMetadata(6)}) == {
            TP: ErrorCode.OFFSET_METADATA_TOO_LARGE,
            ("t", 1): ErrorCode.NONE,
        }
        assert stable_fetch(h, TP, ("t", 1))[1] == {("t", 1): ErrorCode.UNSTABLE_OFFSET_COMMIT}

    run(scenario)


def test_not_the_coordinator_or_still_loading() -> None:
    async def scenario() -> None:
        h = Harness()
        h.coordinator.on_elected(0)
        assert await txn_commit(h, {TP: OffsetAndMetadata(1)}) == {
            TP: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        }
        await _settle()
        h.coordinator.on_resigned(0)
        assert await txn_commit(h, {TP: OffsetAndMetadata(1)}) == {TP: ErrorCode.NOT_COORDINATOR}
        assert h.coordinator.fetch_offsets("g", [TP], require_stable=True) == (
            ErrorCode.NOT_COORDINATOR,
            {},
            {},
        )

    run(scenario)


def test_whichever_record_came_later_in_the_log_wins() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        # a plain commit after the transaction's: the plain one stays
        await txn_commit(h, {TP: OffsetAndMetadata(5)})
        await h.coordinator.commit_offsets("g", "", -1, {TP: OffsetAndMetadata(7)})
        assert committed(h) == 7
        h.coordinator.complete_transactional_offsets(0, PID, committed=True)
        assert committed(h) == 7
        # the transaction's after the plain one: the transaction's wins at its commit
        await h.coordinator.commit_offsets("g", "", -1, {TP: OffsetAndMetadata(8)})
        await txn_commit(h, {TP: OffsetAndMetadata(6)})
        await txn_commit(h, {TP: OffsetAndMetadata(9)})  # the same producer again: replaces 6
        h.coordinator.complete_transactional_offsets(0, PID, committed=True)
        assert committed(h) == 9
        # a new coordinator reading the log (markers written as WriteTxnMarkers would) agrees
        log = FakeOffsetsLog()
        first = Harness(log)
        await first.start()
        await txn_commit(first, {TP: OffsetAndMetadata(5)})
        await first.coordinator.commit_offsets("g", "", -1, {TP: OffsetAndMetadata(7)})
        append_marker(log, PID, committed=True)
        await first.coordinator.commit_offsets("g", "", -1, {("t", 1): OffsetAndMetadata(8)})
        await txn_commit(first, {("t", 1): OffsetAndMetadata(6)})
        append_marker(log, PID, committed=True)
        second = Harness(log)
        await second.start()
        assert committed(second) == 7
        assert committed(second, ("t", 1)) == 6

    run(scenario)


def test_loading_completes_offsets_by_the_markers_in_the_log_and_keeps_the_rest_pending() -> None:
    async def scenario() -> None:
        log = FakeOffsetsLog()
        first = Harness(log)
        await first.start()
        await first.coordinator.commit_offsets("g", "", -1, {TP: OffsetAndMetadata(1)})
        await txn_commit(first, {TP: OffsetAndMetadata(10)}, producer_id=1)
        await txn_commit(first, {("t", 1): OffsetAndMetadata(20)}, producer_id=2)
        await txn_commit(first, {("t", 2): OffsetAndMetadata(30)}, producer_id=3)
        append_marker(log, 1, committed=True)
        append_marker(log, 2, committed=False)
        # producer 3's transaction has no marker yet

        second = Harness(log)
        await second.start()
        offsets, errors = stable_fetch(second, TP, ("t", 1), ("t", 2))
        assert offsets == {TP: 10, ("t", 1): None, ("t", 2): None}
        assert errors == {("t", 2): ErrorCode.UNSTABLE_OFFSET_COMMIT}
        # the marker written after the load completes it
        append_marker(log, 3, committed=True)
        second.coordinator.complete_transactional_offsets(0, 3, committed=True)
        assert stable_fetch(second, ("t", 2)) == ({("t", 2): 30}, {})
        # and a third coordinator reads the same from the log alone
        third = Harness(log)
        await third.start()
        assert stable_fetch(third, TP, ("t", 1), ("t", 2)) == (
            {TP: 10, ("t", 1): None, ("t", 2): 30},
            {},
        )

    run(scenario)


def test_a_marker_while_loading_is_read_from_the_log() -> None:
    async def scenario() -> None:
        log = FakeOffsetsLog()
        first = Harness(log)
        await first.start()
        await txn_commit(first, {TP: OffsetAndMetadata(10)})
        second = Harness(log)
        second.coordinator.on_elected(0)
        append_marker(log, PID, committed=True)
        second.coordinator.complete_transactional_offsets(0, PID, committed=True)  # ignored
        await _settle()
        assert stable_fetch(second, TP) == ({TP: 10}, {})

    run(scenario)


def test_a_transaction_that_ends_while_its_offsets_are_appended() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        commit = asyncio.ensure_future(txn_commit(h, {TP: OffsetAndMetadata(10)}))
        await asyncio.sleep(0)  # prepared, the append under way
        assert stable_fetch(h, TP)[1] == {TP: ErrorCode.UNSTABLE_OFFSET_COMMIT}
        h.coordinator.complete_transactional_offsets(0, PID, committed=True)
        assert await commit == {TP: ErrorCode.NONE}
        assert stable_fetch(h, TP) == ({TP: 10}, {})

    run(scenario)


def test_a_failed_append_leaves_nothing_pending() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        await txn_commit(h, {TP: OffsetAndMetadata(4)})
        h.log.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
        assert await txn_commit(h, {TP: OffsetAndMetadata(5), ("t", 1): OffsetAndMetadata(6)}) == {
            TP: ErrorCode.COORDINATOR_NOT_AVAILABLE,
            ("t", 1): ErrorCode.COORDINATOR_NOT_AVAILABLE,
        }
        # the offset written before is pending again; the one never written is not
        assert stable_fetch(h, TP, ("t", 1))[1] == {TP: ErrorCode.UNSTABLE_OFFSET_COMMIT}
        h.log.fail_with = ErrorCode.INVALID_PRODUCER_EPOCH  # a zombie's epoch: told as it is
        assert await txn_commit(h, {TP: OffsetAndMetadata(7)}) == {
            TP: ErrorCode.INVALID_PRODUCER_EPOCH
        }
        h.log.fail_with = None
        h.coordinator.complete_transactional_offsets(0, PID, committed=True)
        assert stable_fetch(h, TP, ("t", 1)) == ({TP: 4, ("t", 1): None}, {})

    run(scenario)


def test_pending_offsets_keep_an_empty_group_until_the_transaction_ends() -> None:
    async def scenario() -> None:
        minute = 60_000
        h = Harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=minute)
        await h.start()
        await txn_commit(h, {TP: OffsetAndMetadata(10)})
        await h.timers.advance(3 * minute)
        assert h.state() is GroupState.EMPTY  # still here: its offsets are pending
        h.coordinator.complete_transactional_offsets(0, PID, committed=False)
        await h.timers.advance(minute)
        assert h.coordinator.describe_group("g") == (ErrorCode.NONE, None)

    run(scenario)


def test_deleting_offsets_or_the_group_drops_pending_ones() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        await txn_commit(h, {TP: OffsetAndMetadata(10), ("t", 1): OffsetAndMetadata(11)})
        assert await h.coordinator.delete_offsets("g", [TP]) == (
            ErrorCode.NONE,
            {TP: ErrorCode.NONE},
        )
        h.coordinator.complete_transactional_offsets(0, PID, committed=True)
        assert stable_fetch(h, TP, ("t", 1)) == ({TP: None, ("t", 1): 11}, {})
        # a topic deleted takes the pending offsets of its partitions too
        await txn_commit(h, {("t", 1): OffsetAndMetadata(12), ("u", 0): OffsetAndMetadata(1)})
        h.coordinator.on_partitions_deleted([("u", 0)])
        assert stable_fetch(h, ("u", 0), ("t", 1))[1] == {
            ("t", 1): ErrorCode.UNSTABLE_OFFSET_COMMIT
        }
        # DeleteGroups removes an Empty group whatever is pending, as Kafka does
        assert await h.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}
        assert h.coordinator.describe_group("g") == (ErrorCode.NONE, None)
        h.coordinator.complete_transactional_offsets(0, PID, committed=True)
        assert h.coordinator.describe_group("g") == (ErrorCode.NONE, None)

    run(scenario)


def test_a_plain_commit_being_appended_is_unstable_too() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        commit = asyncio.ensure_future(
            h.coordinator.commit_offsets("g", "", -1, {TP: OffsetAndMetadata(3)})
        )
        await asyncio.sleep(0)  # the append under way
        assert stable_fetch(h, TP) == ({TP: None}, {TP: ErrorCode.UNSTABLE_OFFSET_COMMIT})
        assert committed(h) is None  # without require_stable: what is committed so far
        assert await commit == {TP: ErrorCode.NONE}
        assert stable_fetch(h, TP) == ({TP: 3}, {})

    run(scenario)
