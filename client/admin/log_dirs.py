"""Log dirs (KIP-113): what each broker holds in each of its log dirs, and moving a replica
between the log dirs of its broker. Kafka's Admin describeLogDirs / alterReplicaLogDirs.

    admin.describe_log_dirs([0, 1])
    # {0: {"/data/a": LogDirDescription(error=None, replicas={TopicPartition("t", 0):
    #          ReplicaInfo(size=1234, offset_lag=0, is_future=False)}, ...)}, 1: ...}
    admin.alter_replica_log_dirs({TopicPartitionReplica("t", 0, 1): "/data/b"})
    # {TopicPartitionReplica("t", 0, 1): None}     or the partition's KafkaError

Both go to each broker named, at once (a log dir belongs to one broker). A broker that is not
live or does not answer maps to BROKER_NOT_AVAILABLE / NETWORK_EXCEPTION. An AlterReplicaLogDirs
answered REPLICA_NOT_AVAILABLE means the broker hosts no replica yet; it will create the replica
in that dir when it does (the reassignment tool sends it again until the error goes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import grpc

from minikafka.client.admin._routing import AdminBase, _error
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code

__all__ = ["LogDirAdmin", "LogDirDescription", "ReplicaInfo", "TopicPartitionReplica"]


class TopicPartitionReplica(NamedTuple):
    """One replica: a partition on one broker (Kafka's TopicPartitionReplica)."""

    topic: str
    partition: int
    broker_id: int


@dataclass(frozen=True)
class ReplicaInfo:
    size: int  # bytes in its segments
    # Current log: how far its LEO is below the HW (0 normally); future log: how far it is
    # behind the current log; -1 unknown.
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirDescription:
    error: KafkaError | None  # KAFKA_STORAGE_ERROR: the dir is offline
    replicas: dict[TopicPartition, ReplicaInfo]
    total_bytes: int = -1  # of the volume; -1 unknown
    usable_bytes: int = -1
    # Topics with a log in the dir, listed even when none of their partitions was asked for.
    topics: tuple[str, ...] = ()


class LogDirAdmin(AdminBase):
    """DescribeLogDirs and AlterReplicaLogDirs, to each broker."""

    def _broker_stubs(
        self, broker_ids: Iterable[int] | None, timeout_s: float
    ) -> tuple[dict[int, pb_grpc.AdminStub], dict[int, KafkaError]]:
        brokers = self._cluster(refresh=True, timeout_s=timeout_s).brokers
        wanted = sorted(brokers) if broker_ids is None else sorted(set(broker_ids))
        stubs: dict[int, pb_grpc.AdminStub] = {}
        missing: dict[int, KafkaError] = {}
        for broker_id in wanted:
            node = brokers.get(broker_id)
            if node is None:
                missing[broker_id] = error_for_code(
                    ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not alive"
                )
            else:
                stubs[broker_id] = pb_grpc.AdminStub(self._pool.get(node.address))
        return stubs, missing

    def describe_log_dirs(
        self,
        broker_ids: Iterable[int] | None = None,
        *,
        partitions: Iterable[TopicPartition] | None = None,
        timeout_ms: int | None = None,
    ) -> dict[int, dict[str, LogDirDescription] | KafkaError]:
        """Each broker's log dirs (None = every live broker), with the replicas of
        ``partitions`` (None = every one) in each."""
        timeout_s = self._timeout(timeout_ms) / 1000
        stubs, results = self._broker_stubs(broker_ids, timeout_s)
        topics: dict[str, list[int]] = {}
        for tp in partitions or ():
            topics.setdefault(tp.topic, []).append(tp.partition)
        request = pb.DescribeLogDirsRequest(
            all_topics=partitions is None,
            topics=[
                pb.DescribeLogDirsRequest.Topic(topic=t, partitions=ps) for t, ps in topics.items()
            ],
        )
        calls = {
            b: stub.DescribeLogDirs.future(request, timeout=timeout_s) for b, stub in stubs.items()
        }
        answers: dict[int, dict[str, LogDirDescription] | KafkaError] = dict(results)
        for broker_id, call in calls.items():
            try:
                response: pb.DescribeLogDirsResponse = call.result()
            except grpc.RpcError as exc:
                answers[broker_id] = error_for_code(
                    ErrorCode.NETWORK_EXCEPTION, f"broker {broker_id}: {exc.code().name}"
                )
                continue
            error = _error(response.error_code, response.error_message)
            if error is not None:
                answers[broker_id] = error
                continue
            answers[broker_id] = {
                r.log_dir: LogDirDescription(
                    _error(r.error_code, r.error_message),
                    {
                        TopicPartition(t.name, p.partition_index): ReplicaInfo(
                            p.partition_size, p.offset_lag, p.is_future_key
                        )
                        for t in r.topics
                        for p in t.partitions
                    },
                    r.total_bytes,
                    r.usable_bytes,
                    tuple(t.name for t in r.topics),
                )
                for r in response.results
            }
        return dict(sorted(answers.items()))

    def alter_replica_log_dirs(
        self,
        assignments: Mapping[TopicPartitionReplica, str],
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartitionReplica, KafkaError | None]:
        """Move each replica to the log dir named (an absolute path of its broker's log.dirs);
        per replica None (moving, or there already) or its error."""
        timeout_s = self._timeout(timeout_ms) / 1000
        by_broker: dict[int, dict[TopicPartitionReplica, str]] = {}
        for replica, path in assignments.items():
            by_broker.setdefault(replica.broker_id, {})[replica] = path
        stubs, missing = self._broker_stubs(by_broker, timeout_s)
        results: dict[TopicPartitionReplica, KafkaError | None] = {}
        for broker_id, error in missing.items():
            results.update(dict.fromkeys(by_broker[broker_id], error))
        calls = {}
        for broker_id, stub in stubs.items():
            dirs: dict[str, dict[str, list[int]]] = {}
            for replica, path in by_broker[broker_id].items():
                dirs.setdefault(path, {}).setdefault(replica.topic, []).append(replica.partition)
            request = pb.AlterReplicaLogDirsRequest(
                dirs=[
                    pb.AlterReplicaLogDirsRequest.Dir(
                        path=path,
                        topics=[
                            pb.AlterReplicaLogDirsRequest.Topic(name=t, partitions=ps)
                            for t, ps in topics.items()
                        ],
                    )
                    for path, topics in dirs.items()
                ]
            )
            calls[broker_id] = stub.AlterReplicaLogDirs.future(request, timeout=timeout_s)
        for broker_id, call in calls.items():
            try:
                response: pb.AlterReplicaLogDirsResponse = call.result()
            except grpc.RpcError as exc:
                failed = error_for_code(
                    ErrorCode.NETWORK_EXCEPTION, f"broker {broker_id}: {exc.code().name}"
                )
                results.update(dict.fromkeys(by_broker[broker_id], failed))
                continue
            for topic in response.results:
                for p in topic.partitions:
                    replica = TopicPartitionReplica(topic.topic_name, p.partition_index, broker_id)
                    results[replica] = _error(p.error_code, p.error_message)
        return results
