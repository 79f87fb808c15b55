"""Which address a follower fetches from: the leader's endpoint on the follower's own
inter.broker.listener.name (Kafka's makeFollowers), never another listener's."""

from __future__ import annotations

from types import SimpleNamespace

import structlog

from minikafka.broker.replication.partition import PartitionRegistration
from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.proto.common import TopicPartition

TP = TopicPartition("orders", 0)
REGISTRATION = PartitionRegistration(2, 7, (2, 1), (2, 1), 0, 1)


class Metadata:
    """A metadata cache that knows broker 2 with a gRPC and a Kafka listener."""

    def __init__(self, endpoints: dict[int, dict[str, tuple[str, int]]]) -> None:
        self.endpoints = endpoints

    def is_alive(self, broker_id: int) -> bool:
        return broker_id in self.endpoints

    def get_listener_endpoint(self, broker_id: int, listener_name: str) -> tuple[str, int] | None:
        return self.endpoints.get(broker_id, {}).get(listener_name)


def _resolve(listener: str, metadata: Metadata, live_leaders: dict[int, tuple[str, int]]):  # type: ignore[no-untyped-def]
    manager = SimpleNamespace(
        config=SimpleNamespace(inter_broker_listener_name=listener), _metadata=metadata
    )
    return ReplicaManager._leader_address(manager, TP, REGISTRATION, live_leaders)  # type: ignore[arg-type]


KNOWN = {2: {"PLAINTEXT": ("b2", 9092), "KAFKA": ("b2", 19092)}}


def test_the_followers_own_listener_wins_over_the_controllers_live_leaders() -> None:
    # The controller replicates over gRPC and names the leader's gRPC port; this broker's
    # inter-broker listener is the Kafka one: it must not speak Kafka to the gRPC port.
    assert _resolve("KAFKA", Metadata(KNOWN), {2: ("b2", 9092)}) == ("b2", 19092)
    assert _resolve("PLAINTEXT", Metadata(KNOWN), {2: ("b2", 19092)}) == ("b2", 9092)


def test_a_leader_without_the_listener_is_not_followed_and_says_why() -> None:
    with structlog.testing.capture_logs() as logs:
        assert (
            _resolve("KAFKA", Metadata({2: {"PLAINTEXT": ("b2", 9092)}}), {2: ("b2", 9092)}) is None
        )
    assert [e["event"] for e in logs] == ["follower.leader_has_no_listener"]
    assert logs[0]["listener"] == "KAFKA" and logs[0]["leader"] == 2


def test_a_leader_the_metadata_does_not_know_yet_comes_from_the_live_leaders() -> None:
    # A restarted broker's first LeaderAndIsr comes before its first UpdateMetadata.
    assert _resolve("KAFKA", Metadata({}), {2: ("b2", 19092)}) == ("b2", 19092)
    assert _resolve("KAFKA", Metadata({}), {}) is None
