"""The requests one controller event sends, gathered per broker (ControllerBrokerRequestBatch).

An event decides, partition by partition, who must hear about a change; at its end ``send()``
builds one LeaderAndIsr, one UpdateMetadata and one StopReplica request per broker from the
context as the event left it, and hands them to the channels::

    batch = RequestBatch(context, controller_id=1, listener_name="PLAINTEXT")
    batch.add_leader_and_isr([2, 3], tp, is_new=True)
    batch.add_update_metadata(context.live_brokers, [tp])
    batch.send(channels)

Every request carries the controller id and epoch and the broker epoch the controller knows for
its target. UpdateMetadata shows a topic being deleted with leader -2, Kafka's
LeaderDuringDelete, which tells the brokers to drop it from their metadata caches.

Not thread-safe: built and sent on the controller's event thread.
"""

from __future__ import annotations

from collections.abc import Iterable

from minikafka.controller.channels import BrokerChannels, ResponseCallback, inter_broker_endpoint
from minikafka.controller.state import ControllerContext
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import TopicPartition

__all__ = ["EPOCH_DURING_DELETE", "LEADER_DURING_DELETE", "RequestBatch"]

LEADER_DURING_DELETE = -2  # leader in UpdateMetadata and leader_epoch in StopReplica
EPOCH_DURING_DELETE = -2
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class RequestBatch:
    def __init__(self, context: ControllerContext, controller_id: int, listener_name: str) -> None:
        self._context = context
        self._controller_id = controller_id
        self._listener_name = listener_name
        self._leader_and_isr: dict[int, dict[TopicPartition, bool]] = {}
        self._update_metadata: dict[int, set[TopicPartition]] = {}
        self._stop_replica: dict[int, dict[TopicPartition, tuple[bool, int]]] = {}
        self.response_callback: ResponseCallback | None = None

    @property
    def empty(self) -> bool:
        return not (self._leader_and_isr or self._update_metadata or self._stop_replica)

    def add_leader_and_isr(
        self, brokers: Iterable[int], tp: TopicPartition, *, is_new: bool = False
    ) -> None:
        for broker in brokers:
            if broker in self._context.live_brokers:
                per_broker = self._leader_and_isr.setdefault(broker, {})
                per_broker[tp] = per_broker.get(tp, False) or is_new

    def add_update_metadata(
        self, brokers: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        """UpdateMetadata for ``partitions`` (possibly none: the live brokers only)."""
        partitions = list(partitions)
        for broker in brokers:
            if broker in self._context.live_brokers:
                self._update_metadata.setdefault(broker, set()).update(partitions)

    def add_stop_replica(
        self, broker: int, tp: TopicPartition, *, delete: bool, leader_epoch: int
    ) -> None:
        if broker in self._context.live_brokers:
            self._stop_replica.setdefault(broker, {})[tp] = (delete, leader_epoch)

    def send(self, channels: BrokerChannels) -> None:
        for broker, partitions in sorted(self._leader_and_isr.items()):
            request = self._leader_and_isr_request(broker, partitions)
            if request.partition_states:
                channels.send(broker, request, self.response_callback)
        for broker, tps in sorted(self._update_metadata.items()):
            update = self._update_metadata_request(broker, tps)
            channels.send(broker, update, self.response_callback)
        for broker, stops in sorted(self._stop_replica.items()):
            stop = self._stop_replica_request(broker, stops)
            channels.send(broker, stop, self.response_callback)
        self._leader_and_isr.clear()
        self._update_metadata.clear()
        self._stop_replica.clear()

    # --- building the messages -----------------------------------------------------------------

    def _leader_and_isr_request(
        self, broker: int, partitions: dict[TopicPartition, bool]
    ) -> pb.LeaderAndIsrRequest:
        ctx = self._context
        request = pb.LeaderAndIsrRequest(
            controller_id=self._controller_id,
            controller_epoch=ctx.epoch,
            broker_epoch=ctx.broker_epoch(broker),
        )
        leaders: set[int] = set()
        for tp, is_new in sorted(partitions.items()):
            versioned = ctx.partition_states.get(tp)
            if versioned is None or ctx.is_being_deleted(tp.topic):
                continue
            state = versioned.value
            request.partition_states.append(
                pb.LeaderAndIsrRequest.LeaderAndIsrPartitionState(
                    topic_name=tp.topic,
                    topic_id=ctx.topic_ids.get(tp.topic) or "",
                    partition_index=tp.partition,
                    controller_epoch=state.controller_epoch,
                    leader=state.leader,
                    leader_epoch=state.leader_epoch,
                    isr=list(state.isr),
                    partition_epoch=versioned.zk_version,
                    replicas=list(ctx.assignments.get(tp, ())),
                    adding_replicas=list(ctx.adding_replicas.get(tp, ())),
                    removing_replicas=list(ctx.removing_replicas.get(tp, ())),
                    is_new=is_new,
                )
            )
            if state.leader in ctx.live_brokers:
                leaders.add(state.leader)
        for leader in sorted(leaders):
            endpoint = inter_broker_endpoint(
                ctx.live_brokers[leader].registration, self._listener_name
            )
            request.live_leaders.append(
                pb.LeaderAndIsrRequest.LeaderAndIsrLiveLeader(
                    broker_id=leader, host_name=endpoint.host, port=endpoint.port
                )
            )
        return request

    def _update_metadata_request(
        self, broker: int, partitions: set[TopicPartition]
    ) -> pb.UpdateMetadataRequest:
        ctx = self._context
        request = pb.UpdateMetadataRequest(
            controller_id=self._controller_id,
            controller_epoch=ctx.epoch,
            broker_epoch=ctx.broker_epoch(broker),
        )
        for tp in sorted(partitions):
            versioned = ctx.partition_states.get(tp)
            if versioned is None:
                continue
            state = versioned.value
            deleting = ctx.is_being_deleted(tp.topic)
            request.partition_states.append(
                pb.UpdateMetadataRequest.UpdateMetadataPartitionState(
                    topic_name=tp.topic,
                    topic_id=ctx.topic_ids.get(tp.topic) or "",
                    partition_index=tp.partition,
                    controller_epoch=state.controller_epoch,
                    leader=LEADER_DURING_DELETE if deleting else state.leader,
                    leader_epoch=state.leader_epoch,
                    isr=list(state.isr),
                    partition_epoch=versioned.zk_version,
                    replicas=list(ctx.assignments.get(tp, ())),
                    offline_replicas=ctx.offline_replicas(tp),
                )
            )
        for broker_id, live in sorted(ctx.live_brokers.items()):
            registration = live.registration
            first = registration.endpoints[0] if registration.endpoints else None
            request.live_brokers.append(
                pb.UpdateMetadataRequest.UpdateMetadataBroker(
                    id=broker_id,
                    host=first.host if first else "",
                    port=first.port if first else -1,
                    rack=registration.rack,
                    endpoints=[
                        pb.UpdateMetadataRequest.UpdateMetadataEndpoint(
                            port=e.port,
                            host=e.host,
                            listener=e.listener_name,
                            security_protocol=SECURITY_PROTOCOL_IDS.get(e.security_protocol, 0),
                        )
                        for e in registration.endpoints
                    ],
                )
            )
        return request

    def _stop_replica_request(
        self, broker: int, stops: dict[TopicPartition, tuple[bool, int]]
    ) -> pb.StopReplicaRequest:
        ctx = self._context
        return pb.StopReplicaRequest(
            controller_id=self._controller_id,
            controller_epoch=ctx.epoch,
            broker_epoch=ctx.broker_epoch(broker),
            partition_states=[
                pb.StopReplicaRequest.StopReplicaPartitionState(
                    topic_name=tp.topic,
                    partition_index=tp.partition,
                    leader_epoch=leader_epoch,
                    delete_partition=delete,
                )
                for tp, (delete, leader_epoch) in sorted(stops.items())
            ],
        )
