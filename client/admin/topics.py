"""Topic changes, sent to the controller: create, delete, add partitions, elect leaders.

    errors = admin.create_topics([NewTopic("orders", num_partitions=3, replication_factor=3)])
    raise_first(errors)                              # or look at errors["orders"]
    admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("orders", 0)])

Per-item outcomes come back as ``{item: None | KafkaError}``; items a broker answers
NOT_CONTROLLER are sent again, alone, to the controller found anew (AdminBase._per_item).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from minikafka.client.admin._routing import AdminBase, _error, _NotController
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError

# How much sooner than the call's deadline a CreateTopics asks the broker to answer by.
_ANSWER_MARGIN_MS = 200


class ElectionType(IntEnum):
    """Kafka's ElectionType; ``str()`` is the name Kafka prints (PREFERRED, UNCLEAN)."""

    PREFERRED = pb.ELECTION_TYPE_PREFERRED
    UNCLEAN = pb.ELECTION_TYPE_UNCLEAN

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class NewTopic:
    """A topic to create; -1 partitions or replication factor = the broker's default."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: Mapping[int, Sequence[int]] = field(default_factory=dict)
    configs: Mapping[str, str] = field(default_factory=dict)


class TopicAdmin(AdminBase):
    """CreateTopics, DeleteTopics, CreatePartitions and ElectLeaders, at the controller."""

    def create_topics(
        self,
        new_topics: Iterable[NewTopic],
        *,
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> dict[str, KafkaError | None]:
        """Create topics; waits (up to the timeout) until the controller has elected leaders
        and the broker that answers knows them. A topic answered RequestTimedOutError was
        created all the same, its leaders not yet known there (Kafka's AdminClient fails that
        topic's future with TimeoutException): it is not asked for again, which could only
        answer TOPIC_ALREADY_EXISTS."""
        pending = {t.name: t for t in new_topics}
        timeout_ms = self._timeout(timeout_ms)

        def request(timeout_s: float) -> pb.CreateTopicsRequest:
            return pb.CreateTopicsRequest(
                topics=[
                    pb.CreateTopicsRequest.CreatableTopic(
                        name=t.name,
                        num_partitions=-1 if t.replica_assignment else t.num_partitions,
                        replication_factor=-1 if t.replica_assignment else t.replication_factor,
                        assignments=[
                            pb.CreateTopicsRequest.CreatableReplicaAssignment(
                                partition_index=p, broker_ids=list(t.replica_assignment[p])
                            )
                            for p in sorted(t.replica_assignment)
                        ],
                        configs=dict(t.configs),
                    )
                    for t in pending.values()
                ],
                # The broker waits up to this for its metadata to know the new leaders: it
                # answers a little before this call's deadline, never just after it.
                timeout_ms=max(int(timeout_s * 1000) - _ANSWER_MARGIN_MS, 0),
                validate_only=validate_only,
            )

        def send(stub: pb_grpc.AdminStub, timeout_s: float) -> pb.CreateTopicsResponse:
            return stub.CreateTopics(request(timeout_s), timeout=timeout_s)

        return self._per_item(
            "createTopics",
            pending,
            send,
            lambda r: ((t.name, t.error_code, t.error_message) for t in r.topics),
            timeout_ms,
        )

    def delete_topics(
        self, topics: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, KafkaError | None]:
        pending = {name: name for name in topics}
        timeout_ms = self._timeout(timeout_ms)

        def send(stub: pb_grpc.AdminStub, timeout_s: float) -> pb.DeleteTopicsResponse:
            request = pb.DeleteTopicsRequest(topic_names=list(pending), timeout_ms=timeout_ms)
            return stub.DeleteTopics(request, timeout=timeout_s)

        return self._per_item(
            "deleteTopics",
            pending,
            send,
            lambda r: ((t.name, t.error_code, t.error_message) for t in r.responses),
            timeout_ms,
        )

    def create_partitions(
        self,
        new_counts: Mapping[str, int],
        *,
        assignments: Mapping[str, Sequence[Sequence[int]]] | None = None,
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> dict[str, KafkaError | None]:
        """Grow topics to ``new_counts[topic]`` partitions (the new total, as in Kafka)."""
        pending = dict(new_counts)
        assignments = assignments or {}
        timeout_ms = self._timeout(timeout_ms)

        def send(stub: pb_grpc.AdminStub, timeout_s: float) -> pb.CreatePartitionsResponse:
            request = pb.CreatePartitionsRequest(
                topics=[
                    pb.CreatePartitionsRequest.CreatePartitionsTopic(
                        name=name,
                        count=count,
                        assignments=[
                            pb.CreatePartitionsRequest.CreatePartitionsAssignment(
                                broker_ids=list(replicas)
                            )
                            for replicas in assignments.get(name, ())
                        ],
                    )
                    for name, count in pending.items()
                ],
                timeout_ms=timeout_ms,
                validate_only=validate_only,
            )
            return stub.CreatePartitions(request, timeout=timeout_s)

        return self._per_item(
            "createPartitions",
            pending,
            send,
            lambda r: ((t.name, t.error_code, t.error_message) for t in r.results),
            timeout_ms,
        )

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Preferred or unclean election; None = every partition of the cluster.

        ELECTION_NOT_NEEDED comes back as that error for partitions whose preferred replica
        already leads.
        """
        timeout_ms = self._timeout(timeout_ms)
        by_topic: dict[str, list[int]] = {}
        for tp in partitions or ():
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        if partitions is not None and not by_topic:
            return {}
        request = pb.ElectLeadersRequest(
            election_type=int(election_type),  # type: ignore[arg-type]
            topic_partitions=[
                pb.ElectLeadersRequest.TopicPartitions(topic=t, partitions=sorted(ps))
                for t, ps in sorted(by_topic.items())
            ],
            timeout_ms=timeout_ms,
        )

        def send(stub: pb_grpc.AdminStub, timeout_s: float) -> pb.ElectLeadersResponse:
            response = stub.ElectLeaders(request, timeout=timeout_s)
            if response.error_code == ErrorCode.NOT_CONTROLLER:
                raise _NotController()
            error = _error(response.error_code, "")
            if error is not None:
                raise error
            return response

        response = self._to_controller("electLeaders", send, timeout_ms)
        results: dict[TopicPartition, KafkaError | None] = {}
        for topic in response.replica_election_results:
            for p in topic.partition_result:
                tp = TopicPartition(topic.topic, p.partition_id)
                results[tp] = _error(p.error_code, p.error_message)
        return dict(sorted(results.items()))
