"""The follower's truncation rule and the fetch loop against a local leader endpoint."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace
from pathlib import Path

import pytest
import structlog

from minikafka.broker.replication.fetch_session import FetchSessionResponse
from minikafka.broker.replication.fetcher import (
    FetchState,
    PartitionFetchState,
    ReplicaFetcher,
    truncation_offset,
)
from minikafka.broker.replication.leader_endpoint import LeaderEndpointError
from minikafka.broker.replication.partition import Partition, PartitionRegistration
from minikafka.broker.replication.requests import (
    EpochEndOffset,
    FetchPartitionResult,
    FetchRequest,
    OffsetsForLeaderEpochRequest,
)
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import decode_records, encode_batch
from tests.unit.storage.helpers import memory_records
from tests.unit.virtual_time import run_virtual

TP = TopicPartition("t", 0)


def test_truncation_offset_same_epoch_takes_the_smaller_end() -> None:
    # follower: epoch 1 ends at its LEO 5; leader: epoch 1 ended at 3
    assert truncation_offset(1, 3, 5, lambda e: (1, 5)) == (3, True)
    # leader further ahead than the follower: nothing to cut
    assert truncation_offset(1, 9, 5, lambda e: (1, 5)) == (5, True)


def test_truncation_offset_unknown_leader_epoch_steps_back() -> None:
    # leader answers epoch 2, which the follower never had: cut to the end of the follower's
    # largest epoch below 2 (epoch 1 ends at 4) and ask again
    assert truncation_offset(2, 6, 8, lambda e: (1, 4)) == (4, False)
    # the follower knows no epoch <= the answer: trust the leader's end offset
    assert truncation_offset(2, 6, 8, lambda e: (-1, -1)) == (6, True)


def test_truncation_offset_without_epochs() -> None:
    assert truncation_offset(-1, 3, 5, lambda e: (-1, -1)) == (3, True)
    assert truncation_offset(-1, -1, 5, lambda e: (-1, -1)) == (5, True)


class LocalLeader:
    """A leader endpoint answering from fixed data (Kafka's local endpoint, for tests)."""

    def __init__(self, leader_log: Log, epoch: int, error: int = ErrorCode.NONE) -> None:
        self.log = leader_log
        self.epoch = epoch
        self.error = error
        self.fetches: list[FetchRequest] = []
        self.fetch_times: list[float] = []  # the loop's time at each fetch
        self.epoch_requests: list[OffsetsForLeaderEpochRequest] = []

    async def fetch(self, request: FetchRequest) -> FetchSessionResponse:
        self.fetches.append(request)
        self.fetch_times.append(asyncio.get_running_loop().time())
        fp = request.partitions[0]
        records = b""
        if self.error == ErrorCode.NONE:
            records = memory_records(self.log.read(fp.fetch_offset, 1 << 20).records)
        else:
            await asyncio.sleep(0.01)
        data = FetchPartitionResult(
            "t",
            0,
            self.error,
            high_watermark=self.log.log_end_offset,
            log_start_offset=self.log.log_start_offset,
            records=records,
        )
        return FetchSessionResponse(ErrorCode.NONE, 0, [data])

    async def offsets_for_leader_epoch(
        self, request: OffsetsForLeaderEpochRequest
    ) -> list[EpochEndOffset]:
        self.epoch_requests.append(request)
        asked = request.partitions[0].leader_epoch
        epoch, end = self.log.end_offset_for_epoch(asked)
        return [EpochEndOffset("t", 0, self.error, leader_epoch=epoch, end_offset=end)]

    async def close(self) -> None:
        pass


def _follower_and_leader(tmp_path: Path) -> tuple[Partition, Log]:
    leader_log = Log(tmp_path / "leader" / "t-0", LogConfig())
    leader_log.maybe_assign_epoch_start_offset(1, 0)
    leader_log.append_as_leader(encode_batch([(0, None, b"a", ()), (0, None, b"b", ())]), 1)
    leader_log.maybe_assign_epoch_start_offset(2, 2)
    leader_log.append_as_leader(encode_batch([(0, None, b"c", ())]), 2)
    follower = Partition(Log(tmp_path / "follower" / "t-0", LogConfig()), 2)
    # the follower holds a divergent tail: offsets 0-1 of epoch 1, then 2-3 of a lost epoch 1
    follower.log.append_as_follower(
        encode_batch([(0, None, b"a", ()), (0, None, b"b", ())], partition_leader_epoch=1)
    )
    follower.log.append_as_follower(
        encode_batch(
            [(0, None, b"x", ()), (0, None, b"y", ())], base_offset=2, partition_leader_epoch=1
        )
    )
    follower.make_follower(
        PartitionRegistration(
            leader=1,
            leader_epoch=2,
            isr=(1, 2),
            replicas=(1, 2),
            partition_epoch=0,
            controller_epoch=1,
        )
    )
    return follower, leader_log


def _fetcher(partition: Partition, endpoint: LocalLeader) -> ReplicaFetcher:
    return ReplicaFetcher(
        2,
        1,
        endpoint,
        get_partition=lambda tp: partition if tp == TP else None,
        broker_epoch=lambda: 7,
        max_wait_ms=0,
        min_bytes=1,
        partition_max_bytes=1 << 20,
        response_max_bytes=10 << 20,
        backoff_s=0.02,
    )


def test_fetcher_truncates_a_divergent_tail_then_fetches(tmp_path: Path) -> None:
    async def scenario() -> None:
        follower, leader_log = _follower_and_leader(tmp_path)
        endpoint = LocalLeader(leader_log, 2)
        fetcher = _fetcher(follower, endpoint)
        fetcher.add_partitions(
            {TP: PartitionFetchState(follower.log_end_offset, 2, FetchState.TRUNCATING)}
        )
        fetcher.start()
        try:
            for _ in range(200):
                if follower.log_end_offset == 3 and follower.high_watermark == 3:
                    break
                await asyncio.sleep(0.01)
        finally:
            await fetcher.stop()
        asked = endpoint.epoch_requests[0].partitions[0]
        assert (asked.leader_epoch, asked.current_leader_epoch) == (1, 2)
        data = memory_records(follower.log.read(0, 1 << 20).records)
        assert [r.value for r in decode_records(data)] == [b"a", b"b", b"c"]
        fetch = endpoint.fetches[0]
        assert fetch.replica_id == 2 and fetch.replica_epoch == 7
        assert fetch.partitions[0].fetch_offset == 2

    asyncio.run(scenario())


def test_fetcher_backs_off_on_partition_errors(tmp_path: Path) -> None:
    async def scenario() -> None:
        follower, leader_log = _follower_and_leader(tmp_path)
        endpoint = LocalLeader(leader_log, 2, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)
        fetcher = _fetcher(follower, endpoint)
        fetcher.add_partitions(
            {TP: PartitionFetchState(follower.log_end_offset, 2, FetchState.FETCHING)}
        )
        fetcher.start()
        await asyncio.sleep(0.2)
        await fetcher.stop()
        # Each answer takes 10 ms (LocalLeader's error path), then the partition backs off
        # 20 ms: a fetch every 30 ms of loop time, neither a tight loop nor a stalled one.
        gaps = [round(b - a, 6) for a, b in itertools.pairwise(endpoint.fetch_times)]
        assert len(gaps) >= 5 and set(gaps) == {0.03}, gaps
        assert follower.log_end_offset == 4  # nothing changed

    run_virtual(scenario())


class FlakyLeader(LocalLeader):
    """Unreachable for its first ``failures`` fetches, then the LocalLeader."""

    def __init__(self, leader_log: Log, epoch: int, failures: int) -> None:
        super().__init__(leader_log, epoch)
        self.failures = failures

    async def fetch(self, request: FetchRequest) -> FetchSessionResponse:
        if self.failures > 0:
            self.failures -= 1
            raise LeaderEndpointError("UNAVAILABLE", "Connection refused")
        return await super().fetch(request)


def test_an_unreachable_leader_is_logged_once_and_its_return_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        follower, leader_log = _follower_and_leader(tmp_path)
        follower.truncate_to(2, "test")  # no divergence: fetch at once
        endpoint = FlakyLeader(leader_log, 2, failures=4)
        fetcher = _fetcher(follower, endpoint)
        fetcher.add_partitions({TP: PartitionFetchState(2, 2, FetchState.FETCHING)})
        with structlog.testing.capture_logs() as logs:
            fetcher.start()
            try:
                for _ in range(200):
                    if follower.log_end_offset == 3:
                        break
                    await asyncio.sleep(0.01)
            finally:
                await fetcher.stop()
        assert follower.log_end_offset == 3
        shown = [(e["event"], e["log_level"]) for e in logs if e["event"].startswith("fetcher.")]
        assert shown[0] == ("fetcher.fetch_failed", "warning")
        assert [e for e in shown if e[1] != "debug"] == [
            ("fetcher.fetch_failed", "warning"),
            ("fetcher.fetch_recovered", "info"),
        ]
        assert fetcher.lags[TP] == 0  # caught up with the leader's high watermark

    asyncio.run(scenario())


class NetworkLeader(LocalLeader):
    """Answers as a stream does: the answer reaches the fetcher in a later turn of the loop.
    Counts the loop's turns, to see when the next fetch goes out."""

    def __init__(self, leader_log: Log, epoch: int) -> None:
        super().__init__(leader_log, epoch)
        self.turns = 0
        self.delivered_at: list[int] = []
        self.fetched_at: list[int] = []

    def count_turns(self) -> None:
        self.turns += 1
        if len(self.fetches) < 5:
            asyncio.get_running_loop().call_soon(self.count_turns)

    async def fetch(self, request: FetchRequest) -> FetchSessionResponse:
        self.fetched_at.append(self.turns)
        response = await super().fetch(request)
        delivered = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(delivered.set_result, None)
        await delivered
        self.delivered_at.append(self.turns)
        return response


def test_the_next_fetch_goes_out_in_the_turn_the_answer_arrived(tmp_path: Path) -> None:
    """No turn of the loop between an answer (appended) and the fetch that reports the new
    LEO: on a busy broker each turn runs every other ready callback first."""

    async def scenario() -> None:
        follower, leader_log = _follower_and_leader(tmp_path)
        follower.truncate_to(2, "test")  # no divergence: fetching from 2 at once
        endpoint = NetworkLeader(leader_log, epoch=2)
        fetcher = _fetcher(follower, endpoint)
        fetcher.add_partitions({TP: PartitionFetchState(2, 2, FetchState.FETCHING)})
        endpoint.count_turns()
        fetcher.start()
        try:
            while len(endpoint.fetches) < 4:
                await asyncio.sleep(0.001)
        finally:
            await fetcher.stop()
        assert follower.log.log_end_offset == 3
        for delivered, next_fetch in zip(
            endpoint.delivered_at, endpoint.fetched_at[1:], strict=False
        ):
            assert next_fetch == delivered

    asyncio.run(scenario())


# --- the follower's rounds follow what changed ---------------------------------------------


class SessionLeader:
    """A leader holding one fetch session (KIP-227) over partitions "t-0".."t-n" that hold no
    records: a full fetch is answered for every partition it names, an incremental one only
    for the partitions ``news`` names (records, or a new HW). ``errors`` queues a session
    error or a failed RPC for the next fetches."""

    def __init__(self, batches: dict[int, bytes] | None = None) -> None:
        self.fetches: list[FetchRequest] = []
        self.news: dict[int, bytes] = dict(batches or {})
        self.errors: list[int | LeaderEndpointError] = []
        self.session_id = 0

    async def fetch(self, request: FetchRequest) -> FetchSessionResponse:
        self.fetches.append(request)
        error = self.errors.pop(0) if self.errors else None
        await asyncio.sleep(0.002)  # the long poll, short
        if error is not None:
            if isinstance(error, LeaderEndpointError):
                raise error
            return FetchSessionResponse(error, 0, [])
        full = request.session_epoch == 0
        if full:
            self.session_id += 1
        listed = _listed(request)
        answered = listed if full else {p: listed.get(p, 0) for p in self.news}
        results = []
        for p, offset in sorted(answered.items()):
            if offset == 0 and p in self.news:
                data = FetchPartitionResult(
                    "t", p, 0, high_watermark=1, log_start_offset=0, records=self.news.pop(p)
                )
            else:
                data = FetchPartitionResult("t", p, 0, high_watermark=0, log_start_offset=0)
            results.append(data)
        return FetchSessionResponse(ErrorCode.NONE, self.session_id, results)

    async def offsets_for_leader_epoch(
        self, request: OffsetsForLeaderEpochRequest
    ) -> list[EpochEndOffset]:
        raise AssertionError("empty logs need no OffsetsForLeaderEpoch")

    async def close(self) -> None:
        pass


class Follower:
    """``n`` empty follower partitions of "t" and a fetcher over them, counting the fetcher's
    partition look-ups (each is one partition's fetch state built for a request)."""

    def __init__(self, tmp_path: Path, n: int, endpoint: SessionLeader) -> None:
        self.partitions: dict[TopicPartition, Partition] = {}
        for p in range(n):
            partition = Partition(Log(tmp_path / f"t-{p}", LogConfig()), 2)
            partition.make_follower(
                PartitionRegistration(
                    leader=1,
                    leader_epoch=1,
                    isr=(1, 2),
                    replicas=(1, 2),
                    partition_epoch=0,
                    controller_epoch=1,
                )
            )
            self.partitions[TopicPartition("t", p)] = partition
        self.lookups = 0
        self.endpoint = endpoint
        self.fetcher = ReplicaFetcher(
            2,
            1,
            endpoint,
            get_partition=self._get_partition,
            broker_epoch=lambda: 7,
            max_wait_ms=0,
            min_bytes=1,
            partition_max_bytes=1 << 20,
            response_max_bytes=10 << 20,
            backoff_s=0.05,
        )
        self.fetcher.add_partitions(
            {tp: PartitionFetchState(0, 1, FetchState.TRUNCATING) for tp in self.partitions}
        )

    def _get_partition(self, tp: TopicPartition) -> Partition | None:
        self.lookups += 1
        return self.partitions.get(tp)

    async def fetches(self, n: int) -> list[FetchRequest]:
        """The next ``n`` fetch requests."""
        start = len(self.endpoint.fetches)
        for _ in range(2000):
            if len(self.endpoint.fetches) >= start + n:
                return self.endpoint.fetches[start : start + n]
            await asyncio.sleep(0.001)
        raise AssertionError(f"{n} fetches did not come")


def _listed(request: FetchRequest) -> dict[int, int]:
    return {p.partition: p.fetch_offset for p in request.partitions}


def test_an_idle_round_builds_no_per_partition_work(tmp_path: Path) -> None:
    """200 partitions, all idle after one append: once the session is open, a round files no
    partition, builds no fetch state and sends an empty incremental fetch, whatever the number
    of partitions. The append's new fetch offset (the follower's LEO) goes in the next fetch,
    alone."""

    async def scenario() -> None:
        endpoint = SessionLeader()
        follower = Follower(tmp_path, 200, endpoint)
        fetcher = follower.fetcher
        fetcher.start()
        try:
            first, second, _ = await follower.fetches(3)
            assert (first.session_id, first.session_epoch) == (0, 0)
            assert len(_listed(first)) == 200
            # The round after the full answer looks again at the 200 answered partitions
            # (their log start offsets and epochs may have moved); nothing changed, so the
            # fetch lists none of them.
            assert (second.session_id, second.session_epoch) == (1, 1)
            assert _listed(second) == {}

            stats, lookups = replace(fetcher.stats), follower.lookups
            idle = await follower.fetches(20)
            assert all(not r.partitions and not r.forgotten for r in idle)
            assert fetcher.stats.fetches - stats.fetches >= 20
            assert fetcher.stats.partitions_refiled == stats.partitions_refiled
            assert follower.lookups == lookups

            endpoint.news[7] = encode_batch([(0, None, b"x", ())], partition_leader_epoch=1)
            requests = await follower.fetches(4)
            after = [_listed(r) for r in requests]
            reported = after.index({7: 1})  # the new LEO, in the fetch after the append
            assert all(listed == {} for i, listed in enumerate(after) if i != reported)
            fp = requests[reported].partitions[0]
            assert fp.last_fetched_epoch == 1
            assert follower.partitions[TopicPartition("t", 7)].log_end_offset == 1
            # Work for the one partition that changed, not for the 200.
            assert fetcher.stats.partitions_refiled - stats.partitions_refiled <= 2
            assert follower.lookups - lookups <= 2
        finally:
            await fetcher.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "error",
    [
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        LeaderEndpointError("UNAVAILABLE", "reset"),
    ],
    ids=["session_id_not_found", "invalid_session_epoch", "connection_reset"],
)
def test_after_a_session_error_the_next_fetch_lists_every_partition(
    tmp_path: Path, error: int | LeaderEndpointError
) -> None:
    async def scenario() -> None:
        endpoint = SessionLeader()
        follower = Follower(tmp_path, 30, endpoint)
        fetcher = follower.fetcher
        fetcher.start()
        try:
            await follower.fetches(3)
            endpoint.errors.append(error)
            failed, retry, then = await follower.fetches(3)
            assert failed.session_epoch > 0 and _listed(failed) == {}
            assert retry.session_epoch == 0  # a full fetch opening a new session
            assert _listed(retry) == dict.fromkeys(range(30), 0)
            assert (then.session_id, then.session_epoch) == (2, 1)
            assert _listed(then) == {}
        finally:
            await fetcher.stop()

    asyncio.run(scenario())


def test_partitions_that_failed_together_come_back_in_one_fetch(tmp_path: Path) -> None:
    """After a failed fetch every partition backs off until one instant, however far the clock
    moves while they are put back: the retry lists all 30 (one clock read per partition
    brought them back a few at a time on a busy machine)."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        clock, reads = loop.time, itertools.count()
        loop.time = lambda: clock() + next(reads) * 0.0005  # type: ignore[method-assign]
        endpoint = SessionLeader()
        follower = Follower(tmp_path, 30, endpoint)
        fetcher = follower.fetcher
        fetcher.start()
        try:
            await follower.fetches(3)
            endpoint.errors.append(LeaderEndpointError("UNAVAILABLE", "reset"))
            _, retry = await follower.fetches(2)
            assert _listed(retry) == dict.fromkeys(range(30), 0)
        finally:
            await fetcher.stop()

    asyncio.run(scenario())


def test_a_partition_backed_off_leaves_the_session_and_comes_back(tmp_path: Path) -> None:
    """An error answered for one partition backs it off: the next fetch forgets it alone, and
    once the back-off ends a fetch lists it again alone."""

    class OneError(SessionLeader):
        failed = False

        async def fetch(self, request: FetchRequest) -> FetchSessionResponse:
            response = await super().fetch(request)
            if request.session_epoch == 2 and not self.failed:
                self.failed = True
                response.partitions.append(
                    FetchPartitionResult("t", 4, ErrorCode.NOT_LEADER_OR_FOLLOWER)
                )
            return response

    async def scenario() -> None:
        endpoint = OneError()
        follower = Follower(tmp_path, 30, endpoint)
        fetcher = follower.fetcher
        fetcher.start()
        try:
            for _ in range(2000):
                if any(_listed(r) == {4: 0} for r in endpoint.fetches):
                    break
                await asyncio.sleep(0.001)
        finally:
            await fetcher.stop()
        incremental = [r for r in endpoint.fetches if r.session_epoch > 0]
        forgot = [
            i for i, r in enumerate(incremental) if list(r.forgotten) == [TopicPartition("t", 4)]
        ]
        listed = [i for i, r in enumerate(incremental) if _listed(r)]
        assert len(forgot) == 1 and len(listed) == 1 and forgot[0] < listed[0]
        assert _listed(incremental[listed[0]]) == {4: 0}
        assert all(
            not r.partitions and not r.forgotten
            for i, r in enumerate(incremental)
            if i not in (forgot[0], listed[0])
        )

    asyncio.run(scenario())
