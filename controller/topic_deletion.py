"""Deleting topics (Kafka's TopicDeletionManager).

A topic marked under /admin/delete_topics/<t> is queued: every replica of it is to be deleted,
UpdateMetadata shows it being deleted (leader -2) and each replica's broker gets StopReplica
with delete=true. A broker that answers without error has deleted its replica; once none is
left the topic's znodes go (``topic_deleted``). Replicas on dead brokers wait: deletion resumes
when a broker registers and at every election. A topic being deleted takes part in no election.
With ``delete.topic.enable=false`` marks are removed and nothing is deleted::

    deletions = TopicDeletionManager(context, zk, lambda: config, new_batch, channels, forget)
    deletions.on_marked(zk.get_topics_marked_for_deletion())

Not thread-safe: one per term as controller, used on the controller's event thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import structlog

from minikafka.controller.channels import BrokerChannels
from minikafka.controller.config import ControllerConfig
from minikafka.controller.request_batch import EPOCH_DURING_DELETE, RequestBatch
from minikafka.controller.state import ControllerContext, PartitionReplica
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.common import TopicPartition
from minikafka.zk.zk_store import ZkStore

__all__ = ["TopicDeletionManager"]

log = structlog.get_logger("controller")


class TopicDeletionManager:
    def __init__(
        self,
        context: ControllerContext,
        zk: ZkStore,
        config: Callable[[], ControllerConfig],
        new_batch: Callable[[], RequestBatch],
        channels: BrokerChannels,
        forget_topic: Callable[[str], None],
    ) -> None:
        self._ctx = context
        self._zk = zk
        self._config = config  # read at each use: a config change may replace it
        self._new_batch = new_batch
        self._channels = channels
        self._forget_topic = forget_topic  # drops the topic from the context and its watch

    def on_marked(self, marked: Iterable[str]) -> None:
        """Topics marked for deletion in ZooKeeper: queue them and send the StopReplicas."""
        if not self._config().delete_topic_enable:
            for topic in marked:
                log.warning("topic_deletion_disabled", topic=topic)
                self._zk.delete_topic_deletion_mark(topic)
            return
        for topic in marked:
            self.enqueue(topic)
        self.resume()

    def enqueue(self, topic: str) -> None:
        ctx = self._ctx
        if topic not in ctx.topic_ids:
            self._zk.delete_topic_deletion_mark(topic)  # nothing to delete
            return
        if topic in ctx.topics_to_delete:
            return
        if not self._config().delete_topic_enable:
            self._zk.delete_topic_deletion_mark(topic)
            return
        ctx.topics_to_delete.add(topic)
        for tp in ctx.partitions_of(topic):
            for replica in ctx.assignments[tp]:
                ctx.replicas_to_delete.add(PartitionReplica(tp, replica))
        log.info("topic_deletion_started", topic=topic)

    def resume(self) -> None:
        """StopReplica (delete) for every replica still to delete; topics with none left go."""
        ctx = self._ctx
        batch = self._new_batch()
        for topic in sorted(ctx.topics_to_delete):
            pending = [r for r in ctx.replicas_to_delete if r.partition.topic == topic]
            if not pending:
                self._complete(topic)
                continue
            batch.add_update_metadata(ctx.live_brokers, ctx.partitions_of(topic))
            for replica in sorted(pending):
                batch.add_stop_replica(
                    replica.broker_id,
                    replica.partition,
                    delete=True,
                    leader_epoch=EPOCH_DURING_DELETE,
                )
        batch.send(self._channels)

    def on_stop_replica_response(
        self,
        broker_id: int,
        request: pb.StopReplicaRequest,
        response: pb.StopReplicaResponse,
    ) -> None:
        ctx = self._ctx
        failed = {
            TopicPartition(e.topic_name, e.partition_index)
            for e in response.partition_errors
            if e.error_code
        }
        touched: set[str] = set()
        for state in request.partition_states:
            if not state.delete_partition:
                continue
            tp = TopicPartition(state.topic_name, state.partition_index)
            if response.error_code or tp in failed:
                continue  # retried when the broker comes back or at the next election
            ctx.replicas_to_delete.discard(PartitionReplica(tp, broker_id))
            touched.add(tp.topic)
        for topic in sorted(touched & ctx.topics_to_delete):
            if not any(r.partition.topic == topic for r in ctx.replicas_to_delete):
                self._complete(topic)

    def _complete(self, topic: str) -> None:
        self._zk.delete_topic_znodes(topic)
        self._forget_topic(topic)
        log.info("topic_deleted", topic=topic)
