"""Config changes on a running cluster (issue 20): topic overrides and dynamic broker configs
reach every broker through /config/changes and take effect without a restart."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from minikafka.client.admin import NewTopic
from minikafka.proto.errors import ErrorCode, InvalidRequestError
from minikafka.zk.zk_data import CONFIG_CHANGES_PATH
from tests.integration.cluster import REPO_ROOT, Cluster

ClusterFactory = Callable[..., Cluster]

FAST_RETENTION = {"log.retention.check.interval.ms": "300"}


def _segments(cluster: Cluster, broker_id: int, topic: str, partition: int = 0) -> list[Path]:
    return sorted((cluster.brokers[broker_id].log_dir / f"{topic}-{partition}").glob("*.log"))


def _create(cluster: Cluster, topic: str, rf: int = 3, **configs: str) -> None:
    with cluster.admin() as admin:
        errors = admin.create_topics(
            [NewTopic(topic, 1, rf, configs={k.replace("_", "."): v for k, v in configs.items()})]
        )
    assert errors[topic] is None, errors
    cluster.wait_for(lambda: cluster.leader(topic, 0) >= 0, 20, f"a leader for {topic}")
    cluster.wait_for(lambda: len(cluster.isr(topic, 0)) == rf, 20, f"a full ISR for {topic}")


def _produce_ok(cluster: Cluster, topic: str, n: int = 1, size: int = 100) -> None:
    for i in range(n):
        result = cluster.produce(topic, 0, [f"{i:06d}".encode() * (size // 6)], retry_s=10)
        assert result.ok, result


def test_retention_shortened_deletes_old_segments_without_restart(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(overrides=FAST_RETENTION)
    _create(cluster, "shrink", segment_bytes="1024")
    _produce_ok(cluster, "shrink", n=40)
    # A retention pass goes over every log: once one has cut a topic made afterwards with
    # retention.ms=1 on every broker, "shrink" has been through one too, under the default of
    # 7 days, and kept everything.
    _create(cluster, "expiring", segment_bytes="1024", retention_ms="1")
    _produce_ok(cluster, "expiring", n=20)
    cluster.wait_for(
        lambda: all(len(_segments(cluster, b, "expiring")) == 1 for b in cluster.brokers),
        20,
        "a retention pass on every broker",
    )
    before = {b: len(_segments(cluster, b, "shrink")) for b in cluster.brokers}
    assert all(count >= 4 for count in before.values()), before

    with cluster.admin() as admin:
        admin.incremental_alter_configs("shrink", {"retention.ms": "1"})
    cluster.wait_for(
        lambda: all(len(_segments(cluster, b, "shrink")) == 1 for b in cluster.brokers),
        20,
        "every replica to delete its old segments under retention.ms=1",
    )
    for broker in cluster.brokers.values():
        applied = broker.log_events("topic_config_applied")
        assert any(e.get("topic") == "shrink" for e in applied), broker.broker_id
    # The active segment stays; the log still takes records at the offsets that follow.
    result = cluster.produce("shrink", 0, [b"after"], retry_s=10)
    assert result.ok and result.base_offset == 40, result


def test_min_insync_replicas_raised_and_lowered_live(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory()
    _create(cluster, "strict")
    _produce_ok(cluster, "strict")

    with cluster.admin() as admin:
        admin.incremental_alter_configs("strict", {"min.insync.replicas": "4"})
    cluster.wait_for(
        lambda: cluster.produce("strict", 0, [b"x"]).error == ErrorCode.NOT_ENOUGH_REPLICAS,
        20,
        "acks=all to be refused once min.insync.replicas (4) exceeds the ISR (3)",
    )
    # acks=1 does not look at min.insync.replicas, as in Kafka.
    assert cluster.produce("strict", 0, [b"y"], acks=1).ok

    with cluster.admin() as admin:
        admin.incremental_alter_configs("strict", {"min.insync.replicas": None})
    cluster.wait_for(lambda: cluster.produce("strict", 0, [b"z"]).ok, 20, "acks=all accepted again")


def test_dynamic_broker_configs_default_and_per_broker(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(overrides=FAST_RETENTION)
    _create(cluster, "plain")
    _create(cluster, "rolled", segment_bytes="1024")
    _produce_ok(cluster, "rolled", n=30)

    with cluster.admin() as admin:
        # The cluster-wide default reaches every broker and every topic without an override.
        admin.alter_broker_configs(None, {"min.insync.replicas": "4", "log.retention.ms": "1"})
        cluster.wait_for(
            lambda: cluster.produce("plain", 0, [b"x"]).error == ErrorCode.NOT_ENOUGH_REPLICAS,
            20,
            "the cluster default min.insync.replicas=4 to refuse acks=all",
        )
        cluster.wait_for(
            lambda: all(len(_segments(cluster, b, "rolled")) == 1 for b in cluster.brokers),
            20,
            "log.retention.ms=1 as a cluster default to delete old segments",
        )
        defaults = admin.describe_broker_configs(None)  # every broker has applied them
        assert {k: (e.value, e.source) for k, e in defaults.items()} == {
            "log.retention.ms": ("1", 3),
            "min.insync.replicas": ("4", 3),
        }
        # A per-broker value beats the default, on that broker only.
        leader = cluster.leader("plain", 0)
        admin.alter_broker_configs(leader, {"min.insync.replicas": "1"})
        cluster.wait_for(
            lambda: admin.describe_broker_configs(leader)["min.insync.replicas"].value == "1",
            20,
            f"broker {leader} to apply its own min.insync.replicas",
        )
        described = admin.describe_broker_configs(leader)
        entry = described["min.insync.replicas"]
        assert (entry.value, entry.source, entry.read_only) == ("1", 2, False)
        assert [(s.source, s.value) for s in entry.synonyms] == [(2, "1"), (3, "4"), (5, "1")]
        assert described["broker.id"].read_only
        cluster.wait_for(
            lambda: cluster.produce("plain", 0, [b"y"]).ok,
            20,
            "the per-broker min.insync.replicas=1 to win on the leader",
        )
        # Keys that need a restart, unknown keys and bad values are refused; nothing changes.
        for bad, message in [
            ({"log.dirs": "/elsewhere"}, "Cannot update these configs dynamically: Set(log.dirs)"),
            ({"no.such.key": "1"}, "Unknown broker configs: Set(no.such.key)"),
            ({"log.retention.ms": "soon"}, "log.retention.ms"),
        ]:
            with pytest.raises(
                InvalidRequestError, match=message.replace("(", r"\(").replace(")", r"\)")
            ):
                admin.alter_broker_configs(leader, bad)
        assert cluster.zk.get_broker_config(str(leader)) == {"min.insync.replicas": "1"}
        admin.alter_broker_configs(None, {"min.insync.replicas": None, "log.retention.ms": None})
        assert cluster.zk.get_broker_config("<default>") == {}
        cluster.wait_for(
            lambda: admin.describe_broker_configs(None) == {}, 20, "the defaults to be gone"
        )
    # Every change left a notification in Kafka's format.
    changes = cluster.zk.client.get_children(CONFIG_CHANGES_PATH)
    bodies = [
        json.loads(cluster.zk.client.get(f"{CONFIG_CHANGES_PATH}/{name}")[0]) for name in changes
    ]
    assert {"version": 2, "entity_path": "brokers/<default>"} in bodies
    assert {"version": 2, "entity_path": f"brokers/{leader}"} in bodies


def test_dynamic_broker_configs_apply_at_startup(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1, start=False)
    cluster.start_all()
    cluster.wait_until_serving()
    with cluster.admin() as admin:
        admin.alter_broker_configs(0, {"log.cleaner.threads": "2"})
    assert cluster.stop(0) == 0
    cluster.start(0)
    cluster.wait_until_serving()
    with cluster.admin() as admin:
        entry = admin.describe_broker_configs(0)["log.cleaner.threads"]
    assert (entry.value, entry.source) == ("2", 2)


def test_unclean_election_enabled_live_elects_the_leaderless_partition(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory()
    with cluster.admin() as admin:
        errors = admin.create_topics([NewTopic("u", replica_assignment={0: [1, 2]})])
    assert errors["u"] is None, errors
    cluster.wait_for(lambda: cluster.isr("u", 0) == (1, 2), 20, "ISR 1,2")
    _produce_ok(cluster, "u", n=3)
    cluster.kill(2)
    cluster.wait_for(lambda: cluster.isr("u", 0) == (1,), 30, "broker 2 to leave the ISR")
    _produce_ok(cluster, "u", n=2)  # only broker 1 has these
    cluster.kill(1)
    cluster.wait_for(lambda: cluster.leader("u", 0) == -1, 30, "the partition to go offline")
    cluster.start(2)
    # Served once the controller's UpdateMetadata named broker 2: the controller writes the
    # elections of a broker's startup (or of its own failover) before sending that, so a
    # clean election of broker 2 would be in ZooKeeper by now.
    cluster.wait_until_serving([0, 2])
    assert cluster.leader("u", 0) == -1  # broker 2 is out of sync: no clean election

    with cluster.admin() as admin:
        admin.incremental_alter_configs("u", {"unclean.leader.election.enable": "true"})
    cluster.wait_for(
        lambda: cluster.leader("u", 0) == 2, 30, "an unclean election of broker 2 at once"
    )


def test_configs_cli(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1)
    _create(cluster, "cli", rf=1)

    def configs(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "minikafka", "configs"]
        return subprocess.run(
            [*command, "--bootstrap-server", cluster.bootstrap_servers, *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO_ROOT,
        )

    done = configs(
        "--entity-type", "topics", "--entity-name", "cli", "--alter",
        "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]",
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "Completed updating config for topic cli.\n")
    shown = configs("--entity-type", "topics", "--entity-name", "cli", "--describe")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "Dynamic configs for topic cli are:",
        "  cleanup.policy=compact,delete sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, "
        "DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=60000 sensitive=false "
        "synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000, "
        "DEFAULT_CONFIG:log.retention.ms=604800000}",
    ]
    removed = configs(
        "--entity-type", "topics", "--entity-name", "cli", "--alter",
        "--delete-config", "cleanup.policy",
    )  # fmt: skip
    assert removed.returncode == 0, removed.stderr
    assert cluster.zk.get_topic_config("cli") == {"retention.ms": "60000"}

    default = configs(
        "--entity-type", "brokers", "--entity-default", "--alter",
        "--add-config", "log.retention.ms=3600000",
    )  # fmt: skip
    assert default.stdout == "Completed updating default config for brokers in the cluster.\n"
    listed = configs("--entity-type", "brokers", "--entity-default", "--describe")
    assert listed.stdout.splitlines() == [
        "Default configs for brokers in the cluster are:",
        "  log.retention.ms=3600000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000}",
    ]
    broker = configs("--entity-type", "brokers", "--entity-name", "0", "--describe", "--all")
    assert "All configs for broker 0 are:" in broker.stdout
    assert (
        "  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
        "log.retention.ms=3600000, DEFAULT_CONFIG:log.retention.ms=604800000}"
    ) in broker.stdout.splitlines()

    # Failures: one line on stderr, exit 1, nothing changed.
    for args, message in [
        (
            ["--entity-type", "brokers", "--entity-name", "0", "--alter", "--add-config",
             "broker.id=5"],
            "Cannot update these configs dynamically: Set(broker.id)",
        ),
        (
            ["--entity-type", "topics", "--entity-name", "cli", "--alter", "--add-config",
             "retention.ms=soon"],
            "retention.ms",
        ),
        (
            ["--entity-type", "topics", "--entity-name", "cli", "--alter", "--delete-config",
             "flush.ms"],
            "Invalid config(s): flush.ms",
        ),
        (["--entity-type", "topics", "--entity-name", "nope", "--describe"], "does not exist"),
        (["--entity-type", "brokers", "--entity-name", "x", "--describe"], "valid integer"),
    ]:  # fmt: skip
        failed = configs(*args)
        assert failed.returncode == 1, (args, failed.stdout)
        assert len(failed.stderr.splitlines()) == 1 and message in failed.stderr, failed.stderr
    assert cluster.zk.get_topic_config("cli") == {"retention.ms": "60000"}
    assert cluster.zk.get_broker_config("0") == {}
