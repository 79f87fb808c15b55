"""The package exports exactly the names the broker server is meant to use."""

from __future__ import annotations

from minikafka.broker import replication


def test_public_names() -> None:
    assert sorted(replication.__all__) == [
        "FOLLOWER_TRUNCATION_KEY",
        "MetadataView",
        "Partition",
        "PartitionStateStore",
        "ProducerIdManager",
        "ProducerStateManager",
        "Purgatory",
        "ReplicaFetcher",
        "ReplicaFetcherManager",
        "ReplicaManager",
    ]
    for name in replication.__all__:
        value = getattr(replication, name)
        if not isinstance(value, str):
            assert value.__module__.startswith("minikafka.broker.replication.")
