"""Kafka's replica selectors (KIP-392): where a consumer should fetch from."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.replica_selector import (
    LEADER_SELECTOR,
    RACK_AWARE_REPLICA_SELECTOR,
    ClientMetadata,
    LeaderSelector,
    PartitionView,
    RackAwareReplicaSelector,
    ReplicaView,
    replica_selector_for,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import InvalidConfigError

TP = TopicPartition("t", 0)
LEADER = ReplicaView(1, "r1", 100, 0)


def view(*followers: ReplicaView) -> PartitionView:
    return PartitionView((*followers, LEADER), LEADER)


def select(rack: str, *followers: ReplicaView) -> int | None:
    chosen = RackAwareReplicaSelector().select(
        TP, ClientMetadata(rack, "PLAINTEXT"), view(*followers)
    )
    return None if chosen is None else chosen.broker_id


def test_a_client_in_a_follower_rack_gets_that_follower() -> None:
    assert select("r2", ReplicaView(2, "r2", 100, 0), ReplicaView(3, "r3", 100, 0)) == 2


def test_the_leader_without_a_rack_or_a_replica_in_it_or_when_it_is_there() -> None:
    followers = (ReplicaView(2, "r2", 100, 0), ReplicaView(3, "r3", 100, 0))
    assert select("", *followers) == 1  # no client.rack
    assert select("r9", *followers) == 1  # no replica in the client's rack
    assert select("r1", ReplicaView(2, "r1", 100, 0)) == 1  # the leader is in it: the leader
    assert select("R2", *followers) == 1  # racks compare exactly, as Kafka's equals


def test_the_most_caught_up_replica_of_the_rack() -> None:
    behind = ReplicaView(2, "r2", 90, 0)
    ahead = ReplicaView(3, "r2", 100, 500)
    fresher = ReplicaView(4, "r2", 100, 10)
    assert select("r2", behind, ahead) == 3  # largest log end offset
    assert select("r2", behind, ahead, fresher) == 4  # then the most recently caught up


def test_leader_selector_and_the_class_names() -> None:
    assert LeaderSelector().select(TP, ClientMetadata("r2", "L"), view()) == LEADER
    assert isinstance(replica_selector_for(RACK_AWARE_REPLICA_SELECTOR), RackAwareReplicaSelector)
    assert isinstance(replica_selector_for(LEADER_SELECTOR), LeaderSelector)
    assert replica_selector_for(None) is None and replica_selector_for("") is None
    with pytest.raises(InvalidConfigError, match=r"replica\.selector\.class"):
        replica_selector_for("com.example.NearestSelector")


def test_the_broker_config_refuses_a_selector_it_does_not_have(tmp_path: Path) -> None:
    def load(value: str) -> BrokerConfig:
        return BrokerConfig.load(
            overrides=[
                "broker.id=1",
                f"log.dirs={tmp_path}",
                "zookeeper.connect=127.0.0.1:2181",
                f"replica.selector.class={value}",
                "broker.rack=r1",
            ],
            environ={},
        )

    config = load(RACK_AWARE_REPLICA_SELECTOR)
    assert (config.replica_selector_class, config.broker_rack) == (
        RACK_AWARE_REPLICA_SELECTOR,
        "r1",
    )
    assert load("").replica_selector_class is None
    with pytest.raises(InvalidConfigError, match=r"replica\.selector\.class: class not found"):
        load("com.example.NearestSelector")
