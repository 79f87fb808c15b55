"""GroupCoordinator state machine with a fake clock and an in-memory __consumer_offsets."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from minikafka.broker.group.coordinator import (
    GroupConfig,
    GroupCoordinator,
    java_string_hashcode,
    partition_for,
)
from minikafka.broker.group.group_metadata import (
    GroupState,
    JoinResult,
    MemberIdentity,
    SyncResult,
)
from minikafka.proto.common import OffsetAndMetadata
from minikafka.proto.consumer_protocol import Subscription
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import assign_offsets, iter_batch_headers

T = TypeVar("T")


@dataclass
class _Handle:
    due_ms: int
    seq: int
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeTimers:
    """``call_later`` on a clock that moves only when the test says so."""

    def __init__(self) -> None:
        self.now_ms = 0
        self._handles: list[_Handle] = []
        self._seq = 0

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> _Handle:
        self._seq += 1
        handle = _Handle(self.now_ms + round(delay_s * 1000), self._seq, callback)
        self._handles.append(handle)
        return handle

    async def advance(self, ms: int) -> None:
        await _settle()  # let started tasks schedule their timers first
        target = self.now_ms + ms
        while True:
            due = [h for h in self._handles if not h.cancelled and h.due_ms <= target]
            if not due:
                break
            handle = min(due, key=lambda h: (h.due_ms, h.seq))
            self._handles.remove(handle)
            self.now_ms = max(self.now_ms, handle.due_ms)
            handle.callback()
            await _settle()
        self.now_ms = target
        await _settle()


class FakeOffsetsLog:
    """One in-memory log per __consumer_offsets partition."""

    def __init__(self) -> None:
        self.epochs: dict[int, int] = {0: 0}
        self.logs: dict[int, bytearray] = {}
        self.fail_with: ErrorCode | None = None
        self.transactional_ids: list[str | None] = []  # each append's, in order

    def leader_epoch(self, partition: int) -> int | None:
        return self.epochs.get(partition)

    def log_end_offset(self, partition: int) -> int:
        data = self.logs.get(partition, bytearray())
        return max((h.next_offset for _, h in iter_batch_headers(data)), default=0)

    async def append(
        self,
        partition: int,
        records: bytes,
        timeout_ms: int,
        *,
        transactional_id: str | None = None,
    ) -> tuple[int, int]:
        await asyncio.sleep(0)
        self.transactional_ids.append(transactional_id)
        if self.fail_with is not None:
            return self.fail_with, -1
        base = self.log_end_offset(partition)
        data, _ = assign_offsets(records, base, self.epochs.get(partition, 0))
        self.logs.setdefault(partition, bytearray()).extend(data)
        return ErrorCode.NONE, base

    def read(self, partition: int, start: int, max_bytes: int) -> tuple[bytes, int]:
        data = bytes(self.logs.get(partition, b""))
        out = b"".join(
            data[pos : pos + h.size] for pos, h in iter_batch_headers(data) if h.next_offset > start
        )
        return out, self.log_end_offset(partition)


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


class Harness:
    def __init__(self, log: FakeOffsetsLog | None = None, **config: int) -> None:
        self.timers = FakeTimers()
        self.log = log or FakeOffsetsLog()
        settings = {
            "offsets_topic_num_partitions": 1,
            "group_initial_rebalance_delay_ms": 0,
            "group_min_session_timeout_ms": 1000,
        }
        settings.update(config)
        self.coordinator = GroupCoordinator(
            1,
            GroupConfig(**settings),
            self.log,
            call_later=self.timers.call_later,
            time_ms=lambda: self.timers.now_ms,
        )

    async def start(self) -> None:
        self.coordinator.on_elected(0)
        await _settle()

    def join(
        self,
        member_id: str = "",
        *,
        group: str = "g",
        protocols: list[tuple[str, bytes]] | None = None,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 30_000,
        group_instance_id: str | None = None,
    ) -> asyncio.Task[JoinResult]:
        return asyncio.ensure_future(
            self.coordinator.join_group(
                group,
                member_id,
                client_id="client",
                client_host="/127.0.0.1",
                session_timeout_ms=session_timeout_ms,
                rebalance_timeout_ms=rebalance_timeout_ms,
                protocol_type="consumer",
                protocols=protocols or [("range", b"sub-" + member_id.encode())],
                group_instance_id=group_instance_id,
            )
        )

    async def new_member(self, **kwargs: Any) -> str:
        first = await self.join(**kwargs)
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED
        assert first.member_id.startswith("client-")
        return first.member_id

    def sync(
        self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None
    ) -> asyncio.Task[SyncResult]:
        return asyncio.ensure_future(
            self.coordinator.sync_group("g", generation, member_id, assignments or {})
        )

    def state(self, group: str = "g") -> GroupState:
        _, described = self.coordinator.describe_group(group)
        assert described is not None
        return described.state

    async def stable_group(self, count: int) -> tuple[list[str], int]:
        """``count`` members joined and synced: (member ids, generation)."""
        ids = [await self.new_member() for _ in range(count)]
        joins = [self.join(m) for m in ids]
        await self.timers.advance(0)
        results = [await j for j in joins]
        assert all(r.error == ErrorCode.NONE for r in results)
        generation = results[0].generation_id
        leader = results[0].leader
        syncs = [
            self.sync(m, generation, {x: f"a-{x}".encode() for x in ids} if m == leader else {})
            for m in ids
        ]
        await _settle()
        assert [(await s).error for s in syncs] == [ErrorCode.NONE] * count
        assert self.state() is GroupState.STABLE
        return ids, generation


def run(scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(scenario(), 3)

    return asyncio.run(bounded())


def _done(task: Awaitable[Any]) -> bool:
    return asyncio.ensure_future(task).done()


# --- tests -------------------------------------------------------------------------------------


def test_java_hash_and_partition_for_match_kafka() -> None:
    assert java_string_hashcode("") == 0
    assert java_string_hashcode("hello") == 99162322
    assert java_string_hashcode("Aa") == java_string_hashcode("BB") == 2112
    assert java_string_hashcode("polygenelubricants") == -(1 << 31)
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) is 0
    assert java_string_hashcode("billing") == -109829509
    assert partition_for("billing", 50) == 9  # abs, then modulo (not Python's floor modulo)


def test_first_join_requires_member_id_then_completes_a_generation() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        member = await h.new_member()
        assert h.state() is GroupState.EMPTY
        join = h.join(member)
        await _settle()
        assert h.state() is GroupState.PREPARING_REBALANCE
        await h.timers.advance(0)  # group.initial.rebalance.delay.ms = 0
        result = await join
        assert result.error == ErrorCode.NONE
        assert result.generation_id == 1
        assert result.leader == member
        assert result.protocol_name == "range"
        assert [m[0] for m in result.members] == [member]
        assert h.state() is GroupState.COMPLETING_REBALANCE
        sync = await h.sync(member, 1, {member: b"mine"})
        assert sync == SyncResult(ErrorCode.NONE, b"mine", "consumer", "range")
        assert h.state() is GroupState.STABLE
        assert h.coordinator.heartbeat("g", member, 1) == ErrorCode.NONE

    run(scenario)


def test_initial_rebalance_delay_waits_for_more_members() -> None:
    async def scenario() -> None:
        h = Harness(group_initial_rebalance_delay_ms=3000)
        await h.start()
        a = await h.new_member()
        join_a = h.join(a)
        await h.timers.advance(2000)
        b = await h.new_member()
        join_b = h.join(b)
        await h.timers.advance(999)
        assert not join_a.done()
        await h.timers.advance(3000)  # t=5999: b arrived, so one more delay from t=3000
        assert not join_a.done()
        await h.timers.advance(1)
        assert (await join_a).generation_id == (await join_b).generation_id == 1
        assert len((await join_a).members) + len((await join_b).members) == 2

    run(scenario)


def test_pending_member_survives_a_completed_join_and_joins_next() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        a = await h.new_member()
        b = await h.new_member()  # has its id, has not joined yet
        join_a = h.join(a)
        await h.timers.advance(0)
        assert (await join_a).generation_id == 1
        join_b = h.join(b)  # b's id is still good: it starts the next rebalance
        await _settle()
        assert h.state() is GroupState.PREPARING_REBALANCE
        join_a = h.join(a)
        await _settle()
        assert (await join_b).error == ErrorCode.NONE
        assert (await join_a).generation_id == 2
        # a pending member that never joins is forgotten after its session timeout
        c = await h.new_member()
        await h.timers.advance(10_001)
        assert (await h.join(c)).error == ErrorCode.UNKNOWN_MEMBER_ID

    run(scenario)


def test_new_member_rebalances_a_stable_group_and_followers_wait_for_the_leader() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        (a,), generation = await h.stable_group(1)
        b = await h.new_member()
        join_b = h.join(b)
        await _settle()
        assert h.state() is GroupState.PREPARING_REBALANCE
        assert not join_b.done()
        assert h.coordinator.heartbeat("g", a, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        join_a = h.join(a)
        await _settle()
        result_a, result_b = await join_a, await join_b
        assert result_a.generation_id == result_b.generation_id == generation + 1
        leader = result_a.leader
        follower = b if leader == a else a
        assert {m[0] for m in (result_a if leader == a else result_b).members} == {a, b}
        assert (result_b if leader == a else result_a).members == ()
        follower_sync = h.sync(follower, generation + 1)
        await _settle()
        assert not follower_sync.done()  # waits for the leader's assignment
        leader_sync = h.sync(leader, generation + 1, {a: b"A", b: b"B"})
        await _settle()
        assert (await follower_sync).assignment == (b"B" if follower == b else b"A")
        assert (await leader_sync).error == ErrorCode.NONE
        assert h.state() is GroupState.STABLE
        # an old generation is refused
        assert h.coordinator.heartbeat("g", a, generation) == ErrorCode.ILLEGAL_GENERATION
        assert h.coordinator.heartbeat("g", "nobody", generation + 1) == (
            ErrorCode.UNKNOWN_MEMBER_ID
        )

    run(scenario)


def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_removed() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        (a, b), generation = await h.stable_group(2)
        for member in (a, b):  # keep both sessions alive meanwhile
            h.coordinator.heartbeat("g", member, generation)
        join_a = h.join(a, protocols=[("range", b"changed")])  # a new subscription
        await _settle()
        assert h.state() is GroupState.PREPARING_REBALANCE
        await h.timers.advance(9_000)
        assert h.coordinator.heartbeat("g", b, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        await h.timers.advance(21_000)  # the rebalance timeout (30 s) passes; b never rejoined
        result = await join_a
        assert result.error == ErrorCode.NONE
        assert [m[0] for m in result.members] == [a]
        assert result.leader == a
        assert h.coordinator.heartbeat("g", b, result.generation_id) == (
            ErrorCode.UNKNOWN_MEMBER_ID
        )

    run(scenario)


def test_session_expiry_removes_a_member_and_rebalances() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        (a, _), generation = await h.stable_group(2)
        await h.timers.advance(5_000)
        assert h.coordinator.heartbeat("g", a, generation) == ErrorCode.NONE
        assert h.state() is GroupState.STABLE
        await h.timers.advance(5_001)  # b silent for longer than session.timeout.ms (10 s)
        assert h.state() is GroupState.PREPARING_REBALANCE
        assert h.coordinator.heartbeat("g", a, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        result = await h.join(a)
        assert result.generation_id == generation + 1
        assert [m[0] for m in result.members] == [a]
        # and when the last member expires the group is Empty with a new generation
        await h.timers.advance(10_001)
        assert h.state() is GroupState.EMPTY
        _, group = h.coordinator.describe_group("g")
        assert group is not None and group.generation_id == generation + 2

    run(scenario)


def test_leave_group_rebalances_and_the_last_leave_empties_the_group() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        (a, b), generation = await h.stable_group(2)
        code, results = h.coordinator.leave_group("g", [b, "ghost"])
        assert code == ErrorCode.NONE
        assert results == [(b, ErrorCode.NONE), ("ghost", ErrorCode.UNKNOWN_MEMBER_ID)]
        assert h.state() is GroupState.PREPARING_REBALANCE
        result = await h.join(a)
        assert result.generation_id == generation + 1 and result.leader == a
        h.coordinator.leave_group("g", [a])
        await _settle()
        assert h.state() is GroupState.EMPTY
        assert h.coordinator.list_groups() == (ErrorCode.NONE, [("g", "consumer", "Empty")])

    run(scenario)


def test_join_validation_errors() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        assert (await h.join(session_timeout_ms=10)).error == ErrorCode.INVALID_SESSION_TIMEOUT
        assert (await h.join("unknown-id")).error == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await h.join(group="")).error == ErrorCode.INVALID_GROUP_ID
        await h.stable_group(1)
        other = await h.join(protocols=[("roundrobin", b"")])
        assert other.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL

    run(scenario)


def test_protocol_chosen_by_member_votes() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        a = await h.new_member()
        b = await h.new_member()
        c = await h.new_member()
        joins = [
            h.join(a, protocols=[("roundrobin", b""), ("range", b"")]),
            h.join(b, protocols=[("range", b""), ("roundrobin", b"")]),
            h.join(c, protocols=[("roundrobin", b""), ("range", b"")]),
        ]
        await h.timers.advance(0)
        assert {(await j).protocol_name for j in joins} == {"roundrobin"}

    run(scenario)


def test_offset_commits_check_the_generation_and_are_fetched_back() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        commit = h.coordinator.commit_offsets
        tp = ("t", 0)
        # a group unknown here: simple commits (generation -1) only
        assert await commit("g", "", 5, {tp: OffsetAndMetadata(1)}) == {
            tp: ErrorCode.ILLEGAL_GENERATION
        }
        assert await commit("g", "", -1, {tp: OffsetAndMetadata(3)}) == {tp: ErrorCode.NONE}
        (a,), generation = await h.stable_group(1)
        assert await commit("g", "", -1, {tp: OffsetAndMetadata(4)}) == {
            tp: ErrorCode.UNKNOWN_MEMBER_ID
        }
        assert await commit("g", a, generation - 1, {tp: OffsetAndMetadata(4)}) == {
            tp: ErrorCode.ILLEGAL_GENERATION
        }
        assert await commit(
            "g", a, generation, {tp: OffsetAndMetadata(7, "m", leader_epoch=2)}
        ) == {tp: ErrorCode.NONE}
        code, offsets = h.coordinator.fetch_offsets("g", [tp, ("t", 1)])
        assert code == ErrorCode.NONE
        assert offsets[tp] is not None and offsets[tp].offset == 7  # type: ignore[union-attr]
        assert offsets[tp].metadata == "m"  # type: ignore[union-attr]
        assert offsets[("t", 1)] is None
        big = OffsetAndMetadata(8, metadata="x" * 5000)
        assert await commit("g", a, generation, {tp: big}) == {
            tp: ErrorCode.OFFSET_METADATA_TOO_LARGE
        }
        h.log.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
        assert await commit("g", a, generation, {tp: OffsetAndMetadata(9)}) == {
            tp: ErrorCode.COORDINATOR_NOT_AVAILABLE
        }
        assert h.coordinator.fetch_offsets("g", [tp])[1][tp] == offsets[tp]  # unchanged

    run(scenario)


def test_commit_during_completing_rebalance_is_refused() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        a = await h.new_member()
        join = h.join(a)
        await h.timers.advance(0)
        result = await join
        outcome = await h.coordinator.commit_offsets(
            "g", a, result.generation_id, {("t", 0): OffsetAndMetadata(1)}
        )
        assert outcome == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}

    run(scenario)


def test_a_new_leader_loads_groups_and_offsets_from_the_log() -> None:
    async def scenario() -> None:
        log = FakeOffsetsLog()
        first = Harness(log)
        await first.start()
        (a, b), generation = await first.stable_group(2)
        tp = ("t", 3)
        await first.coordinator.commit_offsets("g", a, generation, {tp: OffsetAndMetadata(10)})
        await first.coordinator.commit_offsets("g", b, generation, {tp: OffsetAndMetadata(12)})
        await first.coordinator.commit_offsets("other", "", -1, {tp: OffsetAndMetadata(5)})
        assert (await first.coordinator.delete_groups(["other"])) == {"other": ErrorCode.NONE}
        first.coordinator.on_resigned(0)
        assert first.coordinator.heartbeat("g", a, generation) == ErrorCode.NOT_COORDINATOR

        second = Harness(log)
        second.coordinator.on_elected(0)
        assert second.coordinator.fetch_offsets("g", [tp])[0] == (
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        )
        await _settle()
        code, offsets = second.coordinator.fetch_offsets("g", [tp])
        assert code == ErrorCode.NONE and offsets[tp] is not None
        assert offsets[tp].offset == 12  # type: ignore[union-attr]
        assert second.state() is GroupState.STABLE
        # members keep their generation and assignment across the failover
        assert second.coordinator.heartbeat("g", a, generation) == ErrorCode.NONE
        sync = await second.sync(b, generation)
        assert sync.assignment == f"a-{b}".encode()
        assert second.coordinator.fetch_offsets("other", [tp])[1] == {tp: None}
        # a loaded member that stops heartbeating expires
        await second.timers.advance(5_000)
        assert second.coordinator.heartbeat("g", a, generation) == ErrorCode.NONE
        await second.timers.advance(5_001)
        assert second.state() is GroupState.PREPARING_REBALANCE

    run(scenario)


def test_resigning_answers_waiting_members_not_coordinator() -> None:
    async def scenario() -> None:
        h = Harness(group_initial_rebalance_delay_ms=3000)
        await h.start()
        a = await h.new_member()
        join = h.join(a)
        await _settle()
        h.coordinator.on_resigned(0)
        assert (await join).error == ErrorCode.NOT_COORDINATOR
        assert (await h.join()).error == ErrorCode.NOT_COORDINATOR

    run(scenario)


def test_delete_groups_and_describe() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        (a,), _ = await h.stable_group(1)
        assert await h.coordinator.delete_groups(["g", "nope"]) == {
            "g": ErrorCode.NON_EMPTY_GROUP,
            "nope": ErrorCode.GROUP_ID_NOT_FOUND,
        }
        code, group = h.coordinator.describe_group("g")
        assert code == ErrorCode.NONE and group is not None
        assert group.state.value == "Stable" and list(group.members) == [a]
        assert h.coordinator.list_groups(["Empty"]) == (ErrorCode.NONE, [])
        h.coordinator.leave_group("g", [a])
        await _settle()
        assert await h.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}
        assert h.coordinator.describe_group("g") == (ErrorCode.NONE, None)

    run(scenario)


@pytest.mark.parametrize(
    "state", ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]
)
def test_state_names_are_kafkas(state: str) -> None:
    assert GroupState(state).value == state


def test_resigning_while_loading_discards_that_load() -> None:
    async def scenario() -> None:
        log = FakeOffsetsLog()
        first = Harness(log)
        await first.start()
        await first.coordinator.commit_offsets("g", "", -1, {("t", 0): OffsetAndMetadata(4)})
        second = Harness(log)
        second.coordinator.on_elected(0)
        second.coordinator.on_resigned(0)  # before the load task ran
        await _settle()
        assert second.coordinator.fetch_offsets("g", None)[0] == ErrorCode.NOT_COORDINATOR
        second.coordinator.on_elected(0)
        await _settle()
        code, offsets = second.coordinator.fetch_offsets("g", None)
        assert code == ErrorCode.NONE and list(offsets) == [("t", 0)]

    run(scenario)


def test_offsets_expire_as_kip_211_says() -> None:
    async def scenario() -> None:
        minute = 60_000
        h = Harness(offsets_retention_minutes=10, offsets_retention_check_interval_ms=minute)
        await h.start()
        commit = h.coordinator.commit_offsets
        # a group that only commits: each offset lives 10 minutes after its commit
        await commit("simple", "", -1, {("t", 0): OffsetAndMetadata(1)})
        await h.timers.advance(5 * minute)
        await commit("simple", "", -1, {("t", 1): OffsetAndMetadata(2)})
        # a group with members keeps its offsets, however old
        (a,), generation = await h.stable_group(1)
        await commit("g", a, generation, {("t", 0): OffsetAndMetadata(3)})
        for _ in range(6 * 12):  # a heartbeats every 5 s for 6 minutes
            await h.timers.advance(5_000)
            assert h.coordinator.heartbeat("g", a, generation) == ErrorCode.NONE
        assert list(h.coordinator.fetch_offsets("simple", None)[1]) == [("t", 1)]
        assert list(h.coordinator.fetch_offsets("g", None)[1]) == [("t", 0)]
        # once Empty, 10 minutes from then: offsets and group go
        h.coordinator.leave_group("g", [a])
        await h.timers.advance(9 * minute)
        assert list(h.coordinator.fetch_offsets("g", None)[1]) == [("t", 0)]
        await h.timers.advance(2 * minute)
        assert h.coordinator.fetch_offsets("g", None)[1] == {}
        assert h.coordinator.describe_group("g") == (ErrorCode.NONE, None)
        assert h.coordinator.describe_group("simple") == (ErrorCode.NONE, None)
        # and a reload finds them gone too
        second = Harness(h.log)
        await second.start()
        assert second.coordinator.list_groups() == (ErrorCode.NONE, [])

    run(scenario)


def test_deleting_a_topic_removes_its_offsets_from_every_group() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        commit = h.coordinator.commit_offsets
        (a,), generation = await h.stable_group(1)
        await commit("g", a, generation, {("gone", 0): OffsetAndMetadata(3)})
        await commit("g", a, generation, {("kept", 0): OffsetAndMetadata(4)})
        await commit("simple", "", -1, {("gone", 0): OffsetAndMetadata(5)})
        await commit("simple", "", -1, {("gone", 1): OffsetAndMetadata(6)})

        assert h.coordinator.on_partitions_deleted([("gone", 0), ("gone", 1)]) == 3
        assert list(h.coordinator.fetch_offsets("g", None)[1]) == [("kept", 0)]
        assert h.state() is GroupState.STABLE
        # An Empty group left without offsets goes, as the expiry of its last offset would.
        assert h.coordinator.describe_group("simple") == (ErrorCode.NONE, None)
        await _settle()
        # The tombstones are in the log: a new coordinator loads neither.
        second = Harness(h.log)
        await second.start()
        assert list(second.coordinator.fetch_offsets("g", None)[1]) == [("kept", 0)]
        assert [g for g, _, _ in second.coordinator.list_groups()[1]] == ["g"]

    run(scenario)


def test_a_static_member_that_restarts_takes_its_place_without_a_rebalance() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        same = [("range", b"sub")]
        # Static members join in one round: no MEMBER_ID_REQUIRED.
        joins = [h.join(group_instance_id=i, protocols=same) for i in ("a", "b")]
        await h.timers.advance(0)
        a, b = [await j for j in joins]
        assert (a.error, b.error) == (ErrorCode.NONE, ErrorCode.NONE)
        assert a.member_id.startswith("a-") and b.member_id.startswith("b-")
        generation = a.generation_id
        leader = a.leader
        syncs = [
            h.coordinator.sync_group(
                "g",
                generation,
                m.member_id,
                {a.member_id: b"A", b.member_id: b"B"} if m.member_id == leader else {},
                group_instance_id=i,
            )
            for m, i in ((a, "a"), (b, "b"))
        ]
        assert [(await s).assignment for s in syncs] == [b"A", b"B"]

        # "a" restarts: a new member id, the same generation, its old assignment back.
        again = await h.join(group_instance_id="a", protocols=same)
        assert again.error == ErrorCode.NONE
        assert again.member_id != a.member_id and again.generation_id == generation
        assert again.leader == leader  # as it was: a restarted leader does not assign again
        assert h.state() is GroupState.STABLE
        synced = await h.coordinator.sync_group(
            "g", generation, again.member_id, {}, group_instance_id="a"
        )
        assert (synced.error, synced.assignment) == (ErrorCode.NONE, b"A")
        # "b" never noticed: its heartbeats go on in the same generation.
        assert h.coordinator.heartbeat("g", b.member_id, generation, "b") == ErrorCode.NONE
        # The old incarnation is fenced everywhere.
        fenced = ErrorCode.FENCED_INSTANCE_ID
        assert h.coordinator.heartbeat("g", a.member_id, generation, "a") == fenced
        assert (
            await h.coordinator.sync_group("g", generation, a.member_id, {}, group_instance_id="a")
        ).error == fenced
        committed = await h.coordinator.commit_offsets(
            "g", a.member_id, generation, {("t", 0): OffsetAndMetadata(1)}, "a"
        )
        assert committed == {("t", 0): fenced}
        assert (await h.join(a.member_id, group_instance_id="a", protocols=same)).error == fenced
        assert h.coordinator.leave_group("g", [MemberIdentity(a.member_id, "a")])[1] == [
            (a.member_id, fenced)
        ]
        # The restart was stored: a new coordinator knows the new member id.
        second = Harness(h.log)
        await second.start()
        assert second.coordinator.heartbeat("g", again.member_id, generation, "a") == ErrorCode.NONE

        # A static member leaves by its instance id alone: the group rebalances without it.
        code, results = h.coordinator.leave_group("g", [MemberIdentity("", "b")])
        assert (code, results) == (ErrorCode.NONE, [(b.member_id, ErrorCode.NONE)])
        assert h.state() is GroupState.PREPARING_REBALANCE

    run(scenario)


def test_offset_delete_spares_subscribed_topics_while_the_group_has_members() -> None:
    async def scenario() -> None:
        h = Harness()
        await h.start()
        subscription = [("range", Subscription(("t",)).encode())]
        joining = h.join(group_instance_id="a", protocols=subscription)
        await h.timers.advance(0)
        a = await joining
        synced = await h.coordinator.sync_group(
            "g", a.generation_id, a.member_id, {a.member_id: b""}, group_instance_id="a"
        )
        assert synced.error == ErrorCode.NONE
        offsets = {("t", 0): OffsetAndMetadata(1), ("other", 0): OffsetAndMetadata(2)}
        await h.coordinator.commit_offsets("g", a.member_id, a.generation_id, offsets, "a")

        code, results = await h.coordinator.delete_offsets("g", [("t", 0), ("other", 0)])
        assert code == ErrorCode.NONE
        assert results == {
            ("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
            ("other", 0): ErrorCode.NONE,
        }
        assert list(h.coordinator.fetch_offsets("g", None)[1]) == [("t", 0)]
        assert (await h.coordinator.delete_offsets("unknown", [("t", 0)]))[0] == (
            ErrorCode.GROUP_ID_NOT_FOUND
        )

        # Once Empty, any offset goes, and the group with its last one.
        h.coordinator.leave_group("g", [MemberIdentity("", "a")])
        await h.timers.advance(0)
        assert h.state() is GroupState.EMPTY
        assert await h.coordinator.delete_offsets("g", [("t", 0)]) == (
            ErrorCode.NONE,
            {("t", 0): ErrorCode.NONE},
        )
        assert h.coordinator.describe_group("g") == (ErrorCode.NONE, None)
        second = Harness(h.log)
        await second.start()
        assert second.coordinator.list_groups() == (ErrorCode.NONE, [])

    run(scenario)
