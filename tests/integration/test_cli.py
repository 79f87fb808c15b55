"""`minikafka topics` against a real broker: Kafka's output for create, list, describe, alter,
delete, and its error line."""

from __future__ import annotations

import subprocess
import sys

from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory


def topics(cluster: Cluster, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "minikafka", "topics"]
    command += ["--bootstrap-server", cluster.bootstrap_servers, *argv]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)


def test_topic_lifecycle_through_the_cli(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1)

    created = topics(
        cluster, "--create", "--topic", "logs", "--partitions", "2", "--replication-factor", "1",
        "--config", "retention.ms=60000", "--config", "segment.bytes=1048576",
    )  # fmt: skip
    assert (created.returncode, created.stdout, created.stderr) == (0, "Created topic logs.\n", "")
    again = topics(cluster, "--create", "--topic", "logs", "--partitions", "1")
    assert again.returncode == 1
    assert again.stderr == "Error while executing topic command : Topic 'logs' already exists.\n"
    assert topics(cluster, "--create", "--topic", "logs", "--if-not-exists").returncode == 0
    assert topics(cluster, "--create", "--topic", "other").returncode == 0
    assert topics(cluster, "--list").stdout == "logs\nother\n"

    for partition in range(2):
        cluster.wait_for(lambda p=partition: cluster.leader("logs", p) == 0, what="a leader")  # type: ignore[misc]
    described = topics(cluster, "--describe", "--topic", "logs")
    assert described.returncode == 0, described.stderr
    topic_id = cluster.zk.get_topic("logs").value.topic_id  # type: ignore[union-attr]
    assert described.stdout.splitlines() == [
        f"Topic: logs\tTopicId: {topic_id}\tPartitionCount: 2\tReplicationFactor: 1\t"
        "Configs: retention.ms=60000,segment.bytes=1048576",
        "\tTopic: logs\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0",
        "\tTopic: logs\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0",
    ]

    altered = topics(cluster, "--alter", "--topic", "logs", "--partitions", "3")
    assert (altered.returncode, altered.stderr) == (0, "")
    cluster.wait_for(lambda: cluster.leader("logs", 2) == 0, what="the new partition's leader")
    shrink = topics(cluster, "--alter", "--topic", "logs", "--partitions", "1")
    assert shrink.returncode == 1
    assert shrink.stderr.startswith("Error while executing topic command : ")

    deleted = topics(cluster, "--delete", "--topic", "logs")
    assert (deleted.returncode, deleted.stderr) == (0, "")
    cluster.wait_for(lambda: "logs" not in cluster.zk.get_all_topics(), what="the deletion")
    missing = topics(cluster, "--describe", "--topic", "logs")
    assert missing.returncode == 1
    assert missing.stderr == (
        "Error while executing topic command : Topic 'logs' does not exist as expected\n"
    )
