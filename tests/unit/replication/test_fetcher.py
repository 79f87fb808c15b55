"""The follower's truncation rule and the fetch loop against a local leader endpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import structlog

from minikafka.broker.replication.fetcher import (
    FetchState,
    PartitionFetchState,
    ReplicaFetcher,
    truncation_offset,
)
from minikafka.broker.replication.partition import Partition, PartitionRegistration
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import decode_records, encode_batch

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
        self.fetches: list[pb.FetchRequest] = []
        self.epoch_requests: list[pb.OffsetsForLeaderEpochRequest] = []

    async def fetch(self, request: pb.FetchRequest) -> pb.FetchResponse:
        self.fetches.append(request)
        fp = request.topics[0].partitions[0]
        response = pb.FetchResponse()
        data = response.responses.add(topic="t").partitions.add(
            partition_index=0,
            error_code=self.error,
            high_watermark=self.log.log_end_offset,
            log_start_offset=self.log.log_start_offset,
        )
        if self.error == ErrorCode.NONE:
            data.records = self.log.read(fp.fetch_offset, 1 << 20).records
        else:
            await asyncio.sleep(0.01)
        return response

    async def offsets_for_leader_epoch(
        self, request: pb.OffsetsForLeaderEpochRequest
    ) -> pb.OffsetsForLeaderEpochResponse:
        self.epoch_requests.append(request)
        asked = request.topics[0].partitions[0].leader_epoch
        epoch, end = self.log.end_offset_for_epoch(asked)
        response = pb.OffsetsForLeaderEpochResponse()
        response.topics.add(topic="t").partitions.add(
            partition=0, leader_epoch=epoch, end_offset=end, error_code=self.error
        )
        return response

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
        asked = endpoint.epoch_requests[0].topics[0].partitions[0]
        assert (asked.leader_epoch, asked.current_leader_epoch) == (1, 2)
        data = follower.log.read(0, 1 << 20).records
        assert [r.value for r in decode_records(data)] == [b"a", b"b", b"c"]
        fetch = endpoint.fetches[0]
        assert fetch.replica_id == 2 and fetch.replica_epoch == 7
        assert fetch.topics[0].partitions[0].fetch_offset == 2

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
        # backed off 20 ms between attempts, not a tight loop
        assert 2 <= len(endpoint.fetches) <= 12
        assert follower.log_end_offset == 4  # nothing changed

    asyncio.run(scenario())


class FlakyLeader(LocalLeader):
    """Unreachable for its first ``failures`` fetches, then the LocalLeader."""

    def __init__(self, leader_log: Log, epoch: int, failures: int) -> None:
        super().__init__(leader_log, epoch)
        self.failures = failures

    async def fetch(self, request: pb.FetchRequest) -> pb.FetchResponse:
        if self.failures > 0:
            self.failures -= 1
            raise grpc.aio.AioRpcError(
                grpc.StatusCode.UNAVAILABLE,
                grpc.aio.Metadata(),
                grpc.aio.Metadata(),
                details="Connection refused",
            )
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

    async def fetch(self, request: pb.FetchRequest) -> pb.FetchResponse:
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
