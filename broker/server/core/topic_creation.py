"""Topics a broker creates on its own: ``__consumer_offsets`` on first use, and a topic a
client's Metadata request names when ``auto.create.topics.enable`` allows it.

As Kafka's broker does in ZooKeeper mode (AdminZkClient from any broker, not a request to the
controller): the new ``/brokers/topics/<name>`` znode is written here, the controller sees it and
elects leaders. Until then the topic has no leader, so the caller answers LEADER_NOT_AVAILABLE
(or COORDINATOR_NOT_AVAILABLE) and the client asks again.

* ``__consumer_offsets``: ``offsets.topic.num.partitions`` partitions,
  ``offsets.topic.replication.factor`` replicas capped by the live brokers, Kafka's fixed configs
  of the offsets topic (``cleanup.policy=compact`` ...).
* ``__transaction_state``: the same with the ``transaction.state.log.*`` keys, and Kafka's
  configs of that topic (compacted, ``min.insync.replicas`` = ``transaction.state.log.min.isr``
  capped by the replicas, no unclean election).
* any other topic: ``num.partitions`` and ``default.replication.factor``; a replication factor
  larger than the live brokers is INVALID_REPLICATION_FACTOR, an illegal or colliding name
  INVALID_TOPIC_EXCEPTION, as for CreateTopics.

Replicas are placed by controller/topics.py's rule, rack-aware when every live broker has a
``broker.rack`` (Kafka's auto-creation in ZooKeeper mode goes through CreateTopics' path).

ZooKeeper calls go to a worker thread; one creation per topic is in flight at a time.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.controller.errors import InvalidReplicationFactorError, TopicAlreadyExistsError
from minikafka.controller.topics import assign_replicas, validate_new_topic
from minikafka.proto.cluster_state import Versioned
from minikafka.proto.common import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from minikafka.proto.errors import KafkaError, LeaderNotAvailableError
from minikafka.zk.zk_data import BrokerRegistration, TopicAssignment, random_uuid_base64

__all__ = ["OFFSETS_TOPIC_CONFIGS", "TRANSACTION_STATE_TOPIC_CONFIGS", "TopicCreator", "TopicStore"]

_log = structlog.get_logger(__name__)

# Kafka's fixed configs of the offsets topic (GroupMetadataManager.offsetsTopicConfigs);
# segment.bytes is the broker's offsets.topic.segment.bytes.
OFFSETS_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "compression.type": "producer",
    "segment.bytes": "104857600",
}

# Kafka's configs of the transaction state topic (TransactionLog / TransactionStateManager);
# segment.bytes and min.insync.replicas come from the broker's transaction.state.log.* keys.
TRANSACTION_STATE_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "compression.type": "uncompressed",
    "unclean.leader.election.enable": "false",
    "segment.bytes": "104857600",
    "min.insync.replicas": "2",
}


class TopicStore(Protocol):
    """The ZooKeeper calls topic creation makes (ZkStore satisfies it)."""

    def get_topic(self, topic: str) -> Versioned[TopicAssignment] | None: ...

    def get_all_topics(self) -> list[str]: ...

    def get_live_brokers(self) -> list[BrokerRegistration]: ...

    def create_topic(
        self, assignment: TopicAssignment, config: dict[str, str] | None = None
    ) -> None: ...


class TopicCreator:
    """Creates topics in ZooKeeper on the broker's behalf (see the module docstring)."""

    def __init__(self, config: BrokerConfig, zk: TopicStore) -> None:
        self._config = config
        self._zk = zk
        self._in_flight: dict[str, asyncio.Task[None]] = {}

    async def create(self, topic: str) -> KafkaError | None:
        """Create ``topic`` if it does not exist yet.

        Returns None when the topic exists now (created here or by someone else), else the error
        that refused it. A failure to reach ZooKeeper is logged and answered
        LEADER_NOT_AVAILABLE: the client asks again.
        """
        task = self._in_flight.get(topic)
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(asyncio.to_thread(self._create, topic))
            self._in_flight[topic] = task
            task.add_done_callback(lambda done: self._forget(topic, done))
        try:
            await asyncio.shield(task)
        except KafkaError as exc:
            return exc
        except Exception as exc:
            _log.warning("topic.create_failed", topic=topic, error=str(exc))
            return LeaderNotAvailableError(f"cannot create {topic} yet: {exc}")
        return None

    def _forget(self, topic: str, done: asyncio.Task[None]) -> None:
        if self._in_flight.get(topic) is done:
            del self._in_flight[topic]
        if not done.cancelled():
            done.exception()  # retrieved: logged by create()

    def _create(self, topic: str) -> None:
        if self._zk.get_topic(topic) is not None:
            return
        brokers = self._zk.get_live_brokers()
        live = [b.broker_id for b in brokers]
        racks = {b.broker_id: b.rack for b in brokers if b.rack is not None}
        if not live:
            raise LeaderNotAvailableError("no live brokers")
        if topic == GROUP_METADATA_TOPIC:
            partitions = self._config.offsets_topic_num_partitions
            replication = min(self._config.offsets_topic_replication_factor, len(live))
            configs = dict(OFFSETS_TOPIC_CONFIGS)
            configs["segment.bytes"] = str(self._config.offsets_topic_segment_bytes)
        elif topic == TRANSACTION_STATE_TOPIC:
            partitions = self._config.transaction_state_log_num_partitions
            replication = min(self._config.transaction_state_log_replication_factor, len(live))
            configs = dict(TRANSACTION_STATE_TOPIC_CONFIGS)
            configs["segment.bytes"] = str(self._config.transaction_state_log_segment_bytes)
            # A one-broker cluster must still commit: the ISR can never exceed the replicas.
            configs["min.insync.replicas"] = str(
                min(self._config.transaction_state_log_min_isr, replication)
            )
        else:
            validate_new_topic(topic, self._zk.get_all_topics())
            partitions = self._config.num_partitions
            replication = self._config.default_replication_factor
            if replication > len(live):
                raise InvalidReplicationFactorError(
                    f"Replication factor: {replication} larger than available brokers: "
                    f"{len(live)}.",
                )
            configs = {}
        assignment = assign_replicas(partitions, replication, live, racks=racks)
        try:
            self._zk.create_topic(TopicAssignment(topic, random_uuid_base64(), assignment), configs)
        except TopicAlreadyExistsError:
            return
        _log.info(
            "topic.auto_created",
            topic=topic,
            partitions=partitions,
            replication_factor=replication,
        )
