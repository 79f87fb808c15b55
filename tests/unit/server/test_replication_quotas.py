"""Replication quotas (KIP-73): the rate a ReplicationQuotaManager measures on a fake clock, and
which replicas the topic keys throttle on which broker."""

from __future__ import annotations

import dataclasses

from minikafka.broker.config import BrokerConfig
from minikafka.broker.server.replication_quotas import ReplicationQuotaManager, ReplicationQuotas
from minikafka.proto.common import TopicPartition
from minikafka.proto.topic_config import LONG_MAX


class Clock:
    def __init__(self) -> None:
        self.now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


def _config(broker_id: int = 1, **fields: object) -> BrokerConfig:
    config = BrokerConfig.from_properties({"broker.id": str(broker_id), "zookeeper.connect": "z:1"})
    return dataclasses.replace(config, **fields)  # type: ignore[arg-type]


def test_no_quota_is_never_exceeded_however_much_is_recorded() -> None:
    manager = ReplicationQuotaManager(11, 1, time_ms=Clock())
    manager.record(10**12)
    assert not manager.is_quota_exceeded()
    manager.update_quota(LONG_MAX)  # Kafka's default: no throttle
    assert not manager.is_quota_exceeded()


def test_the_rate_is_over_the_windows_and_falls_back_as_samples_expire() -> None:
    clock = Clock()
    manager = ReplicationQuotaManager(3, 1, time_ms=clock)  # 3 samples of 1 s
    manager.update_quota(1000)
    # A first burst is measured over (samples - 1) windows: 2 s, so up to 2,000 bytes pass.
    manager.record(2000)
    assert not manager.is_quota_exceeded()
    manager.record(1)
    assert manager.is_quota_exceeded()
    clock.now_ms = 500  # 2,001 bytes over 2.5 s now: back under the quota
    assert not manager.is_quota_exceeded()
    manager.record(1000)
    assert manager.is_quota_exceeded()  # 3,001 over 2.5 s
    clock.now_ms = 3000  # the first sample expired: nothing left to measure
    assert not manager.is_quota_exceeded()
    assert manager.rate() == 0


def test_a_quota_of_zero_holds_back_after_the_first_byte() -> None:
    manager = ReplicationQuotaManager(11, 1, time_ms=Clock())
    manager.update_quota(0)
    assert not manager.is_quota_exceeded()
    manager.record(1)
    assert manager.is_quota_exceeded()


def test_the_topic_keys_throttle_the_partitions_listed_with_this_broker() -> None:
    quotas = ReplicationQuotas(_config(broker_id=2))
    quotas.update_topic(
        "t",
        {
            "leader.replication.throttled.replicas": "0:1,0:2,1:2,2:3",
            "follower.replication.throttled.replicas": "2:2",
            "retention.ms": "1000",
        },
    )
    assert [p for p in range(4) if quotas.leader.is_throttled(TopicPartition("t", p))] == [0, 1]
    assert [p for p in range(4) if quotas.follower.is_throttled(TopicPartition("t", p))] == [2]
    assert not quotas.leader.is_throttled(TopicPartition("other", 0))

    quotas.update_topic("t", {"follower.replication.throttled.replicas": "*"})
    assert not quotas.leader.is_throttled(TopicPartition("t", 0))  # cleared
    assert all(quotas.follower.is_throttled(TopicPartition("t", p)) for p in range(4))

    quotas.update_topic("t", {})
    assert not quotas.follower.is_throttled(TopicPartition("t", 0))
    # A value written past the admin's checks throttles nothing.
    quotas.update_topic("t", {"leader.replication.throttled.replicas": "0-2"})
    assert not quotas.leader.is_throttled(TopicPartition("t", 0))


def test_the_rates_come_from_the_broker_config_and_every_log_dir_move_is_throttled() -> None:
    clock = Clock()
    quotas = ReplicationQuotas(
        _config(
            leader_replication_throttled_rate=100,
            replica_alter_log_dirs_io_max_bytes_per_second=50,
            replication_quota_window_num=2,
            alter_log_dirs_replication_quota_window_num=2,
        ),
        time_ms=clock,
    )
    assert (quotas.leader.quota, quotas.follower.quota) == (100, float("inf"))
    assert quotas.alter_log_dirs.is_throttled(TopicPartition("any", 7))
    quotas.alter_log_dirs.record(51)
    assert quotas.alter_log_dirs.is_quota_exceeded()
    quotas.reconfigure(_config(follower_replication_throttled_rate=10))
    assert quotas.leader.quota == float("inf") and quotas.follower.quota == 10
    assert not quotas.alter_log_dirs.is_quota_exceeded()  # back to no throttle
