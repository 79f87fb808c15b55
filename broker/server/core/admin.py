"""Topic administration on plain values: TopicAdmin, one class made of one part per concern.

    TopicAdmin(config: BrokerConfig, controller: KafkaController, zk: ZkStore,
               replica_manager: ReplicaManager | None = None, *,
               metadata_cache: MetadataCache | None = None)

Both front doors call it: the gRPC ``AdminService`` (broker/server/admin_service.py) and the
Kafka listener's handlers (broker/server/kafka/handlers/topics.py, configs.py, offsets.py). Each
turns its own messages into the values of the parts and encodes what comes back, so the checks,
the waits and the errors are written once. The parts, as the client's admin/ package has them::

    _admin_base.py  AdminBase: the config, controller, ZooKeeper and replicas the parts share
    topics.py       create_topics, delete_topics, create_partitions, elect_leaders (controller)
    configs.py      describe_configs, incremental_alter_configs, alter_configs (any broker)
    records.py      delete_records (partition leaders)
    reassignments.py  alter/list_partition_reassignments (controller, KIP-455)

The values are the parts' dataclasses and the controller's own (``NewTopic``,
``TopicPartition``). Runs on the broker's event loop.
"""

from __future__ import annotations

from minikafka.broker.server.core.configs import ConfigsAdmin
from minikafka.broker.server.core.reassignments import ReassignmentsAdmin
from minikafka.broker.server.core.records import RecordsAdmin
from minikafka.broker.server.core.topics import TopicsAdmin

__all__ = ["TopicAdmin"]


class TopicAdmin(TopicsAdmin, ConfigsAdmin, RecordsAdmin, ReassignmentsAdmin):
    """See the module docstring and each part's. Lives on the broker's event loop."""
