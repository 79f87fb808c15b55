"""The leader's fetch session cache (KIP-227) and the fetcher's session handler, without brokers:
a FetchManager fed hand-made fetch results, on a hand-moved clock. The hand-made leader keeps
the ReplicaManager's side of the contract: it tells the cache which partitions changed, reads
what the context names and reports what stays unsettled."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from minikafka.broker.replication.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchContext,
    FetchManager,
    FetchMetadata,
    FetchSessionCache,
    FetchSessionResponse,
    next_epoch,
)
from minikafka.broker.replication.fetch_session_handler import FetchSessionHandler
from minikafka.broker.replication.requests import FetchPartition, FetchPartitionResult
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode


def _sync(fn: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    @functools.wraps(fn)
    def run() -> None:
        asyncio.run(fn())

    return run


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def _manager(slots: int = 10, eviction_ms: int = 120_000) -> tuple[FetchManager, Clock]:
    clock = Clock()
    cache = FetchSessionCache(slots, eviction_ms, rng=random.Random(7))
    return FetchManager(cache, clock), clock


def _fp(partition: int, offset: int = 0, topic: str = "t") -> FetchPartition:
    return FetchPartition(topic, partition, offset, 0, 0, 0, 1 << 20)


class Leader:
    """What the ReplicaManager would answer: per partition a HW, a log start offset, records
    beyond the fetch offset (``data``), or an error. Each change is marked in the sessions, as
    the ReplicaManager's purgatory notifications do."""

    def __init__(self, manager: FetchManager) -> None:
        self.manager = manager
        self.high_watermark: dict[int, int] = {}
        self.data: dict[int, bytes] = {}
        self.errors: dict[int, ErrorCode] = {}
        self.reads: list[list[int]] = []

    def _changed(self, partition: int) -> None:
        self.manager.cache.partition_changed(TopicPartition("t", partition))

    def put(self, partition: int, data: bytes) -> None:
        self.data[partition] = data
        self._changed(partition)

    def set_high_watermark(self, partition: int, high_watermark: int) -> None:
        self.high_watermark[partition] = high_watermark
        self._changed(partition)

    def fail(self, partition: int, code: ErrorCode) -> None:
        self.errors[partition] = code
        self._changed(partition)

    def heal(self, partition: int) -> None:
        del self.errors[partition]
        self._changed(partition)

    async def read(self, context: FetchContext) -> list[FetchPartitionResult]:
        return self.read_partitions(context, context.partitions)

    def read_partitions(
        self, context: FetchContext, partitions: list[FetchPartition]
    ) -> list[FetchPartitionResult]:
        self.reads.append([fp.partition for fp in partitions])
        results = []
        unsettled = []
        for fp in partitions:
            p = fp.partition
            if p in self.errors:
                results.append(FetchPartitionResult(fp.topic, p, self.errors[p], "boom"))
                unsettled.append(TopicPartition(fp.topic, p))
                continue
            records = self.data.pop(p, b"")
            if records:
                unsettled.append(TopicPartition(fp.topic, p))
            results.append(
                FetchPartitionResult(
                    fp.topic,
                    p,
                    ErrorCode.NONE,
                    high_watermark=self.high_watermark.get(p, 0),
                    log_start_offset=0,
                    records=records,
                )
            )
        context.after_read(results, unsettled)
        return results


async def _fetch(
    manager: FetchManager,
    leader: Leader,
    metadata: FetchMetadata,
    partitions: list[FetchPartition],
    forgotten: list[TopicPartition] | None = None,
    *,
    privileged: bool = True,
) -> FetchSessionResponse:
    return await manager.fetch(
        metadata, partitions, forgotten or [], replica_id=1 if privileged else -1, read=leader.read
    )


def _answered(response: FetchSessionResponse) -> list[int]:
    return [r.partition for r in response.partitions]


@_sync
async def test_a_full_fetch_opens_a_session_and_incremental_fetches_answer_only_news() -> None:
    manager, _ = _manager()
    leader = Leader(manager)
    full = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(p) for p in range(5)])
    assert full.error_code == ErrorCode.NONE
    assert full.session_id != INVALID_SESSION_ID
    assert _answered(full) == [0, 1, 2, 3, 4]

    # Nothing changed: the request lists nothing, the leader reads nothing, answers nothing.
    quiet = await _fetch(manager, leader, FetchMetadata.new_incremental(full.session_id), [])
    assert quiet.session_id == full.session_id
    assert _answered(quiet) == []
    assert leader.reads[-1] == []

    # New records on 3 and a new HW on 1: those two are read and answered, nothing else.
    leader.put(3, b"x" * 10)
    leader.set_high_watermark(1, 7)
    busy = await _fetch(manager, leader, FetchMetadata(full.session_id, 2), [])
    assert sorted(_answered(busy)) == [1, 3]
    assert sorted(leader.reads[-1]) == [1, 3]

    # The follower moved its fetch offset on 3: the new offset is what the leader reads; 1
    # was answered and is not read again.
    await _fetch(manager, leader, FetchMetadata(full.session_id, 3), [_fp(3, offset=10)])
    assert leader.reads[-1] == [3]
    session = manager.cache.get(full.session_id)
    assert session is not None
    assert session.partitions[TopicPartition("t", 3)].fetch_offset == 10
    assert manager.stats.full_fetches == 1
    assert manager.stats.incremental_fetches == 3
    # Read again and quiet: settled.
    assert leader.reads[-1] == [3] and not session.changed


@_sync
async def test_a_partition_with_records_moves_to_the_back_of_the_session() -> None:
    manager, _ = _manager()
    leader = Leader(manager)
    full = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(p) for p in range(3)])
    leader.put(0, b"abc")
    leader.put(1, b"def")
    await _fetch(manager, leader, FetchMetadata(full.session_id, 1), [])
    assert leader.reads[-1] == [0, 1]
    # 0 and 1 went to the back: with all three changed, 2 is read first.
    leader.set_high_watermark(2, 1)
    leader.put(0, b"ghi")
    await _fetch(manager, leader, FetchMetadata(full.session_id, 2), [])
    assert leader.reads[-1] == [2, 0, 1]


@_sync
async def test_news_read_by_a_refused_fetch_is_answered_by_the_next() -> None:
    """A fetch that read a new HW, then was refused (another fetch of the session answered
    meanwhile), leaves the partition changed: the next fetch answers it."""
    manager, _ = _manager()
    leader = Leader(manager)
    full = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0), _fp(1)])
    sid = full.session_id
    late = manager.new_context(FetchMetadata(sid, 1), [], [], replica_id=1)
    early = manager.new_context(FetchMetadata(sid, 2), [], [], replica_id=1)
    assert manager.respond(early, await leader.read(early)).partitions == []
    leader.set_high_watermark(0, 9)
    refused = manager.respond(late, leader.read_partitions(late, late.rereads()))
    assert refused.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    after = await _fetch(manager, leader, FetchMetadata(sid, 3), [])
    assert [(r.partition, r.high_watermark) for r in after.partitions] == [(0, 9)]
    assert _answered(await _fetch(manager, leader, FetchMetadata(sid, 4), [])) == []


@_sync
async def test_a_partition_to_revisit_is_read_by_the_next_fetch_not_by_a_parked_one() -> None:
    """An ISR write ended (``revisit``): the next fetch's first read of each follower's session
    reads the partition (there the leader records the follower's fetch state and retries an
    expansion); a parked fetch's re-reads, which record nothing, leave the mark alone."""
    manager, _ = _manager()
    leader = Leader(manager)
    full = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0), _fp(1)])
    sid = full.session_id
    parked = manager.new_context(FetchMetadata(sid, 1), [], [], replica_id=1)
    assert parked.partitions == []
    manager.cache.revisit(TopicPartition("t", 1))
    assert parked.rereads() == []
    assert manager.respond(parked, leader.read_partitions(parked, parked.rereads())).error_code == 0

    revisiting = manager.new_context(FetchMetadata(sid, 2), [], [], replica_id=1)
    assert [fp.partition for fp in revisiting.partitions] == [1]
    assert _answered(manager.respond(revisiting, await leader.read(revisiting))) == []
    # Taken by that read: the next fetch reads nothing.
    assert manager.new_context(FetchMetadata(sid, 3), [], [], replica_id=1).partitions == []

    # A consumer's fetch records no follower state: its session is not marked.
    consumer = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(1)], privileged=False)
    manager.cache.revisit(TopicPartition("t", 1))
    quiet = manager.new_context(FetchMetadata(consumer.session_id, 1), [], [], replica_id=-1)
    assert quiet.partitions == []


@_sync
async def test_a_full_fetch_read_while_an_isr_write_ended_revisits_its_partitions() -> None:
    """No session holds the partitions of a full fetch being read, so nothing can be marked:
    the session it makes reads every partition at its first incremental fetch."""
    manager, _ = _manager()
    leader = Leader(manager)
    for revisited in (False, True):
        context = manager.new_context(FetchMetadata.initial(), [_fp(0), _fp(1)], [], replica_id=1)
        results = await leader.read(context)
        if revisited:
            manager.cache.revisit(TopicPartition("t", 0))
        full = manager.respond(context, results)
        first = manager.new_context(FetchMetadata(full.session_id, 1), [], [], replica_id=1)
        assert [fp.partition for fp in first.partitions] == ([0, 1] if revisited else [])


@_sync
async def test_a_fetch_credits_only_the_partitions_its_session_held() -> None:
    """Unlisted partitions were fetched at the session's previous fetch; one this fetch adds
    was not (``added``: no credit for it, partition.py)."""
    manager, clock = _manager()
    leader = Leader(manager)
    full = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)])
    opened = clock.ms
    clock.ms += 500
    context = manager.new_context(
        FetchMetadata(full.session_id, 1), [_fp(0, offset=3), _fp(1)], [], replica_id=1
    )
    assert context.previous_fetch_ms == opened
    assert context.added == {TopicPartition("t", 1)}


@_sync
async def test_removing_a_session_wakes_its_parked_fetch_which_reads_everything() -> None:
    """A session evicted or closed hears of no change any more: ``on_removed`` wakes the fetch
    parked on it, which answers at once what a read of every partition finds."""
    removed: list[int] = []
    manager = FetchManager(
        FetchSessionCache(1, 120_000, rng=random.Random(7), on_removed=removed.append), Clock()
    )
    leader = Leader(manager)
    consumer = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)], privileged=False)
    sid = consumer.session_id
    parked = manager.new_context(FetchMetadata(sid, 1), [], [], replica_id=-1)
    assert not parked.session_removed and parked.rereads() == []
    # A follower's session takes the only slot (a consumer's may be evicted at any age).
    await _fetch(manager, leader, FetchMetadata.initial(), [_fp(1)])
    assert removed == [sid] and sid not in manager.cache
    leader.put(0, b"late")  # marks nothing: no session holds 0 now
    assert parked.session_removed
    answer = manager.respond(parked, leader.read_partitions(parked, parked.rereads()))
    assert _answered(answer) == [0]


@_sync
async def test_sessionless_fetches_keep_no_session_and_close_the_one_named() -> None:
    manager, _ = _manager()
    leader = Leader(manager)
    legacy = await _fetch(
        manager, leader, FetchMetadata(INVALID_SESSION_ID, FINAL_EPOCH), [_fp(0), _fp(1)]
    )
    assert legacy.session_id == INVALID_SESSION_ID
    assert _answered(legacy) == [0, 1]
    assert len(manager.cache) == 0

    full = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)])
    assert len(manager.cache) == 1
    closing = await _fetch(manager, leader, FetchMetadata(full.session_id, FINAL_EPOCH), [_fp(0)])
    assert closing.session_id == INVALID_SESSION_ID
    assert len(manager.cache) == 0


@_sync
async def test_session_errors_are_kafkas_codes() -> None:
    manager, _ = _manager()
    leader = Leader(manager)
    unknown = await _fetch(manager, leader, FetchMetadata(12345, 1), [_fp(0)])
    assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND) == 70
    assert unknown.session_id == INVALID_SESSION_ID and unknown.partitions == []
    assert leader.reads == []  # nothing read for a refused fetch

    full = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)])
    wrong = await _fetch(manager, leader, FetchMetadata(full.session_id, 5), [])
    assert wrong.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert int(ErrorCode.INVALID_FETCH_SESSION_EPOCH) == 71
    # The session survives a wrong epoch: the right one still works.
    right = await _fetch(manager, leader, FetchMetadata(full.session_id, 1), [])
    assert right.error_code == ErrorCode.NONE
    # A full fetch naming it (INITIAL) replaces it with a new session.
    again = await _fetch(manager, leader, FetchMetadata(full.session_id, INITIAL_EPOCH), [_fp(0)])
    assert again.session_id not in (INVALID_SESSION_ID, full.session_id)
    assert full.session_id not in manager.cache


@_sync
async def test_an_overlapping_fetch_of_one_session_is_refused_when_it_answers() -> None:
    manager, _ = _manager()
    leader = Leader(manager)
    full = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)])
    first = manager.new_context(FetchMetadata(full.session_id, 1), [], [], replica_id=1)
    second = manager.new_context(FetchMetadata(full.session_id, 2), [], [], replica_id=1)
    assert manager.respond(second, await leader.read(second)).error_code == 0
    late = manager.respond(first, await leader.read(first))
    assert late.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH


@_sync
async def test_partitions_added_and_forgotten_mid_session() -> None:
    manager, _ = _manager()
    leader = Leader(manager)
    full = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0), _fp(1)])
    sid = full.session_id

    # Added: read, and answered once (its HW is news to the session).
    added = await _fetch(manager, leader, FetchMetadata(sid, 1), [_fp(2)])
    assert leader.reads[-1] == [2]
    assert _answered(added) == [2]
    assert manager.stats.partitions_cached == 3

    # Forgotten: neither read nor answered, its change with it.
    leader.put(0, b"new")
    forgot = await _fetch(manager, leader, FetchMetadata(sid, 2), [], [TopicPartition("t", 0)])
    assert leader.reads[-1] == []
    assert _answered(forgot) == []
    assert manager.stats.partitions_cached == 2

    # Forgetting the last partitions closes the session: session id 0 in the answer.
    closed = await _fetch(
        manager, leader, FetchMetadata(sid, 3), [], [TopicPartition("t", 1), TopicPartition("t", 2)]
    )
    assert closed.session_id == INVALID_SESSION_ID
    assert sid not in manager.cache


@_sync
async def test_an_error_is_answered_every_time_and_its_end_once() -> None:
    """A leader change shows as NOT_LEADER_OR_FOLLOWER on the partition, in every answer
    until the fetcher forgets it; if the error goes away, the partition is answered again."""
    manager, _ = _manager()
    leader = Leader(manager)
    full = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0), _fp(1)])
    sid = full.session_id
    leader.fail(1, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    for epoch in (1, 2):
        answer = await _fetch(manager, leader, FetchMetadata(sid, epoch), [])
        assert [(r.partition, r.error_code) for r in answer.partitions] == [
            (1, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        ]
    leader.heal(1)
    recovered = await _fetch(manager, leader, FetchMetadata(sid, 3), [])
    assert [(r.partition, r.error_code) for r in recovered.partitions] == [(1, 0)]
    assert _answered(await _fetch(manager, leader, FetchMetadata(sid, 4), [])) == []


@_sync
async def test_eviction_follows_kafkas_rules() -> None:
    manager, clock = _manager(slots=2, eviction_ms=1_000)
    leader = Leader(manager)
    consumer_a = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)], privileged=False)
    consumer_b = await _fetch(
        manager, leader, FetchMetadata.initial(), [_fp(0), _fp(1)], privileged=False
    )
    assert INVALID_SESSION_ID not in (consumer_a.session_id, consumer_b.session_id)

    # Full, and the sessions are young: a third consumer gets no session (but its answer).
    third = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)], privileged=False)
    assert third.session_id == INVALID_SESSION_ID
    assert _answered(third) == [0]

    # A follower's session evicts the least valuable consumer session, young as it is.
    follower = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)])
    assert follower.session_id != INVALID_SESSION_ID
    assert consumer_a.session_id not in manager.cache
    assert consumer_b.session_id in manager.cache
    assert manager.stats.evictions == 1

    # The follower's session is young: another follower's cannot evict it, but can evict the
    # remaining consumer's.
    follower_2 = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(5)])
    assert consumer_b.session_id not in manager.cache
    third_follower = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(6)])
    assert third_follower.session_id == INVALID_SESSION_ID
    assert follower.session_id in manager.cache
    assert follower_2.session_id in manager.cache

    # Idle longer than the eviction time: stale, evicted by anyone, a consumer included.
    clock.ms += 1_001
    await _fetch(manager, leader, FetchMetadata(follower_2.session_id, 1), [])  # kept in use
    consumer_c = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)], privileged=False)
    assert consumer_c.session_id != INVALID_SESSION_ID
    assert follower.session_id not in manager.cache
    assert follower_2.session_id in manager.cache
    gone = await _fetch(manager, leader, FetchMetadata(follower.session_id, 1), [])
    assert gone.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


@_sync
async def test_a_session_old_enough_may_be_evicted_by_a_larger_one() -> None:
    manager, clock = _manager(slots=1, eviction_ms=1_000)
    leader = Leader(manager)
    small = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)], privileged=False)
    clock.ms += 1_500
    # Used just now (not stale) but created more than the eviction time ago.
    await _fetch(manager, leader, FetchMetadata(small.session_id, 1), [], privileged=False)
    smaller = await _fetch(manager, leader, FetchMetadata.initial(), [], privileged=False)
    assert smaller.session_id == INVALID_SESSION_ID  # fewer partitions: worth less
    larger = await _fetch(
        manager, leader, FetchMetadata.initial(), [_fp(0), _fp(1)], privileged=False
    )
    assert larger.session_id != INVALID_SESSION_ID
    assert small.session_id not in manager.cache


@_sync
async def test_no_slots_means_no_sessions() -> None:
    manager, _ = _manager(slots=0)
    leader = Leader(manager)
    answer = await _fetch(manager, leader, FetchMetadata.initial(), [_fp(0)])
    assert answer.session_id == INVALID_SESSION_ID and _answered(answer) == [0]


def test_epochs_wrap_to_one_and_final_stays_final() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


# --- the fetcher's side ------------------------------------------------------------------------


def _tp(p: int) -> TopicPartition:
    return TopicPartition("t", p)


def _update(handler: FetchSessionHandler, wanted: dict[TopicPartition, FetchPartition]) -> None:
    for tp, fp in wanted.items():
        handler.update(tp, fp)


def test_handler_sends_everything_once_then_only_changes() -> None:
    handler = FetchSessionHandler()
    wanted = {_tp(p): _fp(p) for p in range(4)}
    _update(handler, wanted)
    first = handler.build()
    assert first.metadata == FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
    assert len(first.to_send) == 4 and first.to_forget == []
    assert handler.handle_response(0, 99, wanted)

    same = handler.build()
    assert same.metadata == FetchMetadata(99, 1)
    assert same.to_send == [] and same.to_forget == []
    assert handler.handle_response(0, 99, [])

    handler.update(_tp(2), _fp(2, offset=5))
    handler.update(_tp(9), _fp(9))
    handler.update(_tp(3), _fp(3))  # the state the session holds: nothing to send
    handler.remove(_tp(0))
    handler.remove(_tp(42))  # never fetched: nothing to forget
    changed = handler.build()
    assert changed.metadata == FetchMetadata(99, 2)
    assert [fp.partition for fp in changed.to_send] == [2, 9]
    assert changed.to_forget == [_tp(0)]
    assert changed.session_partitions == 4


@pytest.mark.parametrize(
    ("error", "next_metadata"),
    [
        (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)),
        (ErrorCode.INVALID_FETCH_SESSION_EPOCH, FetchMetadata(99, INITIAL_EPOCH)),
    ],
)
def test_handler_starts_over_after_a_session_error(
    error: ErrorCode, next_metadata: FetchMetadata
) -> None:
    handler = FetchSessionHandler()
    wanted = {_tp(0): _fp(0)}
    _update(handler, wanted)
    handler.build()
    handler.handle_response(0, 99, wanted)
    handler.build()
    assert not handler.handle_response(error, 0, [])
    retry = handler.build()
    assert retry.metadata == next_metadata
    assert retry.to_send == [_fp(0)]  # a full fetch again


def test_handler_after_a_failed_rpc_or_a_bad_answer_sends_a_full_fetch() -> None:
    handler = FetchSessionHandler()
    wanted = {_tp(0): _fp(0)}
    _update(handler, wanted)
    handler.build()
    handler.handle_response(0, 99, wanted)
    handler.build()
    handler.handle_error()
    assert handler.build().metadata == FetchMetadata(99, INITIAL_EPOCH)
    assert handler.handle_response(0, 100, wanted)
    handler.build()
    # An incremental answer naming a partition outside the session.
    assert not handler.handle_response(0, 100, [_tp(7)])
    assert handler.build().metadata == FetchMetadata(100, INITIAL_EPOCH)


def test_handler_without_a_session_keeps_sending_full_fetches() -> None:
    handler = FetchSessionHandler()
    wanted = {_tp(0): _fp(0)}
    _update(handler, wanted)
    handler.build()
    assert handler.handle_response(0, INVALID_SESSION_ID, wanted)
    again = handler.build()
    assert again.metadata.is_full and again.to_send == [_fp(0)]


def test_a_cached_partition_keeps_the_topic_id_it_was_named_by() -> None:
    # Fetch v13+ names topics by id; the Kafka door tells a re-created topic by this id.
    cached = CachedPartition.of(FetchPartition("t", 0, 5, topic_id="old"))
    assert cached.fetch_partition(TopicPartition("t", 0)).topic_id == "old"

    cached.update_request_params(FetchPartition("t", 0, 7, topic_id="new"))
    assert cached.fetch_partition(TopicPartition("t", 0)) == FetchPartition(
        "t", 0, 7, topic_id="new"
    )
