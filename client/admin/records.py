"""Offsets and records at each partition's leader: ListOffsets and DeleteRecords.

    admin.list_offsets({TopicPartition("orders", 0): LATEST})   # {tp: ListOffsetsResultInfo}
    admin.delete_records({TopicPartition("orders", 0): 100})    # {tp: new low watermark}

Items are grouped by leader; an item answered with a retriable error (a leader moved, none
elected yet) is sent again after a metadata refresh (``_to_leaders``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import NamedTuple, TypeVar

import grpc

from minikafka.client._retry import RetryLater
from minikafka.client.admin._routing import AdminBase, _nodes, _rpc_problem, _timed_out
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, error_for_code

K = TypeVar("K")
V = TypeVar("V")

EARLIEST = -2  # ListOffsets specs, as the wire spells them
LATEST = -1
MAX_TIMESTAMP = -3


class ListOffsetsResultInfo(NamedTuple):
    offset: int  # -1 when nothing matched a timestamp
    timestamp: int  # -1 unless the spec was a timestamp
    leader_epoch: int


class RecordAdmin(AdminBase):
    """ListOffsets and DeleteRecords, at the partitions' leaders."""

    def list_offsets(
        self, specs: Mapping[TopicPartition, int], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """ListOffsets at each partition's leader. A spec is ``EARLIEST`` (-2, the log start
        offset), ``LATEST`` (-1, the high watermark), ``MAX_TIMESTAMP`` (-3) or a timestamp in
        ms (the first offset whose timestamp is at least that, -1 when there is none)."""

        def request(leader_items: Mapping[TopicPartition, int]) -> pb.ListOffsetsRequest:
            by_topic: dict[str, list[pb.ListOffsetsRequest.ListOffsetsPartition]] = {}
            for tp, spec in leader_items.items():
                by_topic.setdefault(tp.topic, []).append(
                    pb.ListOffsetsRequest.ListOffsetsPartition(
                        partition_index=tp.partition, current_leader_epoch=-1, timestamp=spec
                    )
                )
            return pb.ListOffsetsRequest(
                replica_id=-1,
                topics=[
                    pb.ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps)
                    for t, ps in by_topic.items()
                ],
            )

        def send(
            address: str, items: Mapping[TopicPartition, int], timeout_s: float
        ) -> dict[TopicPartition, tuple[int, str, ListOffsetsResultInfo]]:
            stub = pb_grpc.DataStub(self._pool.get(address))
            response = stub.ListOffsets(request(items), timeout=timeout_s)
            return {
                TopicPartition(t.name, p.partition_index): (
                    p.error_code,
                    p.error_message,
                    ListOffsetsResultInfo(p.offset, p.timestamp, p.leader_epoch),
                )
                for t in response.topics
                for p in t.partitions
            }

        return self._to_leaders("listOffsets", dict(specs), send, timeout_ms)

    def delete_records(
        self, before_offsets: Mapping[TopicPartition, int], *, timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """Move each partition's log start offset up to the given offset (-1 = the high
        watermark), at its leader; returns the new low watermarks. Raises the first error."""
        timeout_ms = self._timeout(timeout_ms)

        def send(
            address: str, items: Mapping[TopicPartition, int], timeout_s: float
        ) -> dict[TopicPartition, tuple[int, str, int]]:
            by_topic: dict[str, list[pb.DeleteRecordsRequest.DeleteRecordsPartition]] = {}
            for tp, offset in items.items():
                by_topic.setdefault(tp.topic, []).append(
                    pb.DeleteRecordsRequest.DeleteRecordsPartition(
                        partition_index=tp.partition, offset=offset
                    )
                )
            request = pb.DeleteRecordsRequest(
                topics=[
                    pb.DeleteRecordsRequest.DeleteRecordsTopic(name=t, partitions=ps)
                    for t, ps in by_topic.items()
                ],
                timeout_ms=timeout_ms,
            )
            response = pb_grpc.AdminStub(self._pool.get(address)).DeleteRecords(
                request, timeout=timeout_s
            )
            return {
                TopicPartition(t.name, p.partition_index): (
                    p.error_code,
                    p.error_message,
                    p.low_watermark,
                )
                for t in response.topics
                for p in t.partitions
            }

        return self._to_leaders("deleteRecords", dict(before_offsets), send, timeout_ms)

    def _to_leaders(
        self,
        what: str,
        pending: dict[TopicPartition, K],
        send: Callable[
            [str, Mapping[TopicPartition, K], float], dict[TopicPartition, tuple[int, str, V]]
        ],
        timeout_ms: int | None,
    ) -> dict[TopicPartition, V]:
        """Send each partition's item to its leader; items answered with a retriable error
        (a leader moved, none elected yet) are sent again after a metadata refresh. The first
        other error is raised."""
        timeout_ms = self._timeout(timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000
        results: dict[TopicPartition, V] = {}
        last_problem = "no answer yet"

        def attempt() -> None:
            """One round: metadata, then each leader its items; RetryLater while some remain."""
            nonlocal last_problem
            remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
            response = self._metadata(sorted({tp.topic for tp in pending}), remaining_ms)
            nodes = _nodes(response)
            leaders: dict[int, dict[TopicPartition, K]] = {}
            for topic in response.topics:
                if topic.error_code != ErrorCode.NONE:
                    error = error_for_code(topic.error_code, topic.error_message)
                    # a topic missing from the metadata is not waited for: it is a typo far
                    # more often than a topic being created at this moment
                    if not error.retriable or error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                        raise error
                    last_problem = f"{topic.name}: {error}"
                    continue
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    if tp in pending and p.leader_id in nodes:
                        leaders.setdefault(p.leader_id, {})[tp] = pending[tp]
            known = {
                TopicPartition(t.name, p.partition_index)
                for t in response.topics
                for p in t.partitions
            }
            missing = [tp for tp in pending if tp not in known]
            if missing and all(t.error_code == ErrorCode.NONE for t in response.topics):
                raise error_for_code(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"partition {missing[0]} does not exist"
                )
            for leader, items in leaders.items():
                try:
                    answers = send(
                        nodes[leader].address, items, max(deadline - time.monotonic(), 0.001)
                    )
                except grpc.RpcError as exc:
                    last_problem = f"broker {leader}: {_rpc_problem(exc)}"
                    continue
                for tp, (code, message, value) in answers.items():
                    if tp not in pending:
                        continue
                    if code == ErrorCode.NONE:
                        results[tp] = value
                        del pending[tp]
                        continue
                    error = error_for_code(code, message)
                    if not error.retriable:
                        raise error
                    last_problem = f"{tp}: {error}"
            if pending:
                raise RetryLater(last_problem)

        if pending:
            self._retry.call(attempt, deadline=deadline, timed_out=_timed_out(what, timeout_ms))
        return dict(sorted(results.items()))
