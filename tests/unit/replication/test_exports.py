"""The package exports exactly the names the broker server is meant to use."""

from __future__ import annotations

import broker.replication


def test_public_names() -> None:
    assert sorted(broker.replication.__all__) == [
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
    for name in broker.replication.__all__:
        value = getattr(broker.replication, name)
        if not isinstance(value, str):
            assert value.__module__.startswith("broker.replication.")
