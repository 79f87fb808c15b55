"""The controller's settings: the broker keys (Kafka's names) that the controller reads.

The broker builds it from its own config; the controller never imports broker/::

    config = ControllerConfig.from_attributes(broker_config)   # picks fields by name
    config = ControllerConfig(unclean_leader_election_enable=True, num_partitions=3)

    field                                    Kafka key                                  default
    unclean_leader_election_enable           unclean.leader.election.enable             false
    auto_leader_rebalance_enable             auto.leader.rebalance.enable               true
    leader_imbalance_check_interval_seconds  leader.imbalance.check.interval.seconds    300
    leader_imbalance_per_broker_percentage   leader.imbalance.per.broker.percentage     10
    num_partitions                           num.partitions                             1
    default_replication_factor               default.replication.factor                 1
    delete_topic_enable                      delete.topic.enable                        true
    request_timeout_ms                       request.timeout.ms (controller -> broker)  30000
    inter_broker_listener_name               inter.broker.listener.name                 PLAINTEXT
    control_plane_listener_name              control.plane.listener.name                none

LeaderAndIsr's live leaders carry each leader's endpoint on inter.broker.listener.name (where
followers fetch, gRPC or Kafka); the requests themselves go to each broker's endpoint on
control.plane.listener.name, the inter-broker listener when unset (``control_plane_listener``).

``leader_imbalance_check_interval_seconds`` is a float so that tests may use fractions of a
second. ``retry_backoff_ms`` is the pause between resends of a controller request to a broker
that did not answer (Kafka retries such sends at once; a small pause keeps a dead socket from
spinning). Immutable: safe from any thread.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from minikafka.proto.sasl_channel import SaslCredentials

__all__ = ["ControllerConfig"]


@dataclass(frozen=True)
class ControllerConfig:
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: float = 300.0
    leader_imbalance_per_broker_percentage: int = 10
    num_partitions: int = 1
    default_replication_factor: int = 1
    delete_topic_enable: bool = True
    request_timeout_ms: int = 30_000
    inter_broker_listener_name: str = "PLAINTEXT"
    control_plane_listener_name: str | None = None
    retry_backoff_ms: int = 100
    # The brokers take requests up to this size; LeaderAndIsr and UpdateMetadata grow with the
    # partitions they carry.
    socket_request_max_bytes: int = 104_857_600
    # This broker's login when the control plane listener is SASL_* (None: no login).
    control_plane_sasl: SaslCredentials | None = None

    def __post_init__(self) -> None:
        if self.leader_imbalance_check_interval_seconds <= 0:
            raise ValueError("leader.imbalance.check.interval.seconds must be positive")
        if not 0 <= self.leader_imbalance_per_broker_percentage <= 100:
            raise ValueError("leader.imbalance.per.broker.percentage must be within 0..100")
        if self.num_partitions < 1 or self.default_replication_factor < 1:
            raise ValueError("num.partitions and default.replication.factor must be at least 1")

    @property
    def control_plane_listener(self) -> str:
        return self.control_plane_listener_name or self.inter_broker_listener_name

    @classmethod
    def from_attributes(cls, source: Any, **overrides: Any) -> ControllerConfig:
        """Take every field that ``source`` (e.g. a BrokerConfig) has under the same name."""
        values = {
            f.name: getattr(source, f.name)
            for f in dataclasses.fields(cls)
            if hasattr(source, f.name)
        }
        values.update(overrides)
        return cls(**values)
