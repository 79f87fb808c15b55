"""Log dirs (KIP-113) on real brokers with two log dirs each: DescribeLogDirs and
AlterReplicaLogDirs through kafka-python's admin client (Kafka's wire), minikafka's AdminClient
(gRPC) and ``minikafka log-dirs``; a move of every replica of a partition to its broker's other
dir under continuous acks=all produce loses nothing, and the replicas agree afterwards; a dir
that is not in log.dirs, a replica the broker does not host and an offline dir are refused with
Kafka's errors."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import kafka
import kafka.errors as kafka_errors
import pytest
from kafka.structs import TopicPartitionReplica as KafkaTopicPartitionReplica

from minikafka.broker.storage.checkpoints import (
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
)
from minikafka.client.admin import NewTopic, TopicPartitionReplica, raise_first
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import iter_batch_headers
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

FAST = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    "log.flush.offset.checkpoint.interval.ms": "500",
}


def second_dir(cluster: Cluster, broker_id: int) -> Path:
    return cluster.brokers[broker_id].root / "logs2"


def start_with_two_dirs(cluster: Cluster) -> None:
    for broker_id, broker in cluster.brokers.items():
        cluster.start(
            broker_id, extra={"log.dirs": f"{broker.log_dir},{second_dir(cluster, broker_id)}"}
        )
    cluster.wait_until_serving()


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka", *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def where(cluster: Cluster, broker_id: int, topic: str, partition: int) -> tuple[Path, bool]:
    """(the dir holding the broker's current replica, whether a future one exists)."""
    name = f"{topic}-{partition}"
    dirs = (cluster.brokers[broker_id].log_dir, second_dir(cluster, broker_id))
    current = [d for d in dirs if (d / name).is_dir()]
    assert len(current) == 1, current
    future = any(p.name.startswith(name + ".") and p.name.endswith("-future") for d in dirs
                 for p in d.iterdir())  # fmt: skip
    return current[0], future


def replica_bytes(path: Path, below: int) -> bytes:
    """The batches of a stopped broker's replica directory that end at or below ``below``."""
    out = []
    for segment in sorted(path.glob("*.log"), key=lambda p: int(p.stem)):
        data = segment.read_bytes()
        for pos, header in iter_batch_headers(data):
            if header.next_offset <= below:
                out.append(data[pos : pos + header.size])
    return b"".join(out)


def test_move_every_replica_under_produce_with_kafka_python(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST, start=False)
    start_with_two_dirs(cluster)
    with cluster.admin() as admin:
        raise_first(
            admin.create_topics([NewTopic("moving", 1, 3, {}, {"min.insync.replicas": "2"})])
        )
    cluster.wait_for(lambda: len(cluster.isr("moving", 0)) == 3, 30, "a full ISR")
    kp = kafka.KafkaAdminClient(
        bootstrap_servers=cluster.kafka_bootstrap_servers, request_timeout_ms=10_000
    )
    sent: list[bytes] = []
    acked: list[bytes] = []
    stop = threading.Event()

    def produce() -> None:
        n = 0
        while not stop.is_set():
            value = b"m%06d" % n
            n += 1
            sent.append(value)
            result = cluster.produce("moving", 0, [value], acks=-1, timeout_ms=3000, retry_s=5)
            if result.ok:
                acked.append(value)

    producer = threading.Thread(target=produce, name="producer")
    producer.start()
    try:
        cluster.wait_for(lambda: len(acked) >= 100, 30, "records before the move")
        # DescribeLogDirs (v4 through kafka-python): each broker's two dirs, the replica in one.
        described = {d["broker"]: d["log_dirs"] for d in kp.describe_log_dirs()}
        assert sorted(described) == [0, 1, 2]
        sources: dict[int, Path] = {}
        for broker_id, log_dirs in described.items():
            assert {d["log_dir"] for d in log_dirs} == {
                str(cluster.brokers[broker_id].log_dir),
                str(second_dir(cluster, broker_id)),
            }
            holding = [
                d
                for d in log_dirs
                for t in d["topics"]
                if t["name"] == "moving" and t["partitions"]
            ]
            assert len(holding) == 1 and holding[0]["error_code"] == 0
            (p,) = next(t for t in holding[0]["topics"] if t["name"] == "moving")["partitions"]
            assert p["partition_size"] > 0 and p["is_future_key"] is False
            assert holding[0]["total_bytes"] > 0 and holding[0]["usable_bytes"] >= 0
            sources[broker_id] = Path(holding[0]["log_dir"])
        targets = {
            b: next(
                d for d in (cluster.brokers[b].log_dir, second_dir(cluster, b)) if d != sources[b]
            )
            for b in sources
        }
        # AlterReplicaLogDirs: brokers 0 and 1 through kafka-python, broker 2 through gRPC.
        answer = kp.alter_replica_log_dirs(
            {KafkaTopicPartitionReplica("moving", 0, b): str(targets[b]) for b in (0, 1)}
        )
        assert set(answer.values()) == {kafka_errors.NoError}, answer
        with cluster.admin() as admin:
            assert admin.alter_replica_log_dirs(
                {TopicPartitionReplica("moving", 0, 2): str(targets[2])}
            ) == {TopicPartitionReplica("moving", 0, 2): None}
        cluster.wait_for(
            lambda: all(where(cluster, b, "moving", 0) == (targets[b], False) for b in targets),
            60,
            "every replica in its new dir",
        )
        for b in targets:
            (event,) = cluster.brokers[b].log_events("replica_move.completed")
            assert event["log_dir"] == str(targets[b]) and event["previous_log_dir"] == str(
                sources[b]
            )
        moved_at = len(acked)
        cluster.wait_for(lambda: len(acked) >= moved_at + 50, 30, "records after the move")
    finally:
        stop.set()
        producer.join(30)
        kp.close()
    # Every acknowledged record is there once, in order.
    read = [r.value for r in cluster.fetch_all("moving", 0)]
    assert len(read) == len(set(read)), "a record was stored twice"
    assert not [v for v in acked if v not in set(read)], "acknowledged but lost"
    order = {v: i for i, v in enumerate(sent)}
    assert [order[v] for v in read if v is not None] == sorted(
        order[v] for v in read if v is not None
    ), "records out of order"
    # The CLI sees the replicas in their new dirs, none of them future.
    done = cli(
        "log-dirs", "--bootstrap-server", cluster.bootstrap_servers, "--describe",
        "--topic-list", "moving",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 0,1,2",
    ]
    document = json.loads(lines[2])
    assert document["version"] == 1
    for broker in document["brokers"]:
        in_dirs = {d["logDir"]: d["partitions"] for d in broker["logDirs"] if d["partitions"]}
        assert list(in_dirs) == [str(targets[broker["broker"]])]
        (entry,) = in_dirs[str(targets[broker["broker"]])]
        assert entry["partition"] == "moving-0" and entry["isFuture"] is False
        assert entry["size"] > 0 and entry["offsetLag"] == 0
    # Replicas agree below the HW; the checkpoints name the partition in its new dir.
    hw = cluster.fetch(cluster.leader("moving", 0), "moving", 0, 0).high_watermark
    cluster.wait_for(
        lambda: all(
            r.log_end_offset >= hw
            for b in (0, 1, 2)
            for r in cluster.admin().describe_replicas([b])[b].partitions  # type: ignore[union-attr]
            if r.topic == "moving"
        ),
        20,
        "followers to catch up",
    )
    for b in (0, 1, 2):
        assert cluster.stop(b) == 0
    tp = TopicPartition("moving", 0)
    images = {b: replica_bytes(targets[b] / "moving-0", hw) for b in targets}
    assert len(set(images.values())) == 1 and images[0]
    for b, target in targets.items():
        for name in (REPLICATION_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT):
            assert tp in OffsetCheckpointFile(target / name).read(), (b, name)
            assert tp not in OffsetCheckpointFile(sources[b] / name).read(), (b, name)


def test_bad_log_dirs_are_refused_with_kafkas_errors(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1, overrides=FAST, start=False)
    start_with_two_dirs(cluster)
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic("bad", 2, 1)]))
        cluster.wait_for(lambda: cluster.leader("bad", 1) >= 0, 20, "leaders")
        good = str(second_dir(cluster, 0))
        errors = admin.alter_replica_log_dirs(
            {
                TopicPartitionReplica("bad", 0, 0): "/no/such/dir",
                TopicPartitionReplica("bad", 9, 0): good,
            }
        )
        assert {r.partition: e.code for r, e in errors.items() if e is not None} == {
            0: ErrorCode.LOG_DIR_NOT_FOUND,
            9: ErrorCode.REPLICA_NOT_AVAILABLE,
        }
    kp = kafka.KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap_servers)
    try:
        answer = kp.alter_replica_log_dirs({("bad", 1, 0): "relative/dir"})
        assert list(answer.values()) == [kafka_errors.LogDirNotFoundError]
    finally:
        kp.close()
    # Nothing changed: no future log anywhere.
    for d in (cluster.brokers[0].log_dir, second_dir(cluster, 0)):
        assert not [p for p in d.iterdir() if p.name.endswith("-future")]
    # An offline dir: a directory where the HW checkpoint's temporary file goes makes its
    # next write fail with an I/O error (the tests run as root: permissions would not).
    assert cluster.stop(0) == 0
    poison = second_dir(cluster, 0) / (REPLICATION_OFFSET_CHECKPOINT + ".tmp")
    poison.mkdir()
    cluster.start(0)
    cluster.wait_until_serving()
    cluster.wait_for(
        lambda: any(e.get("event") == "log_dir.offline" for e in cluster.brokers[0].log_events()),
        20,
        "the second dir to go offline",
    )
    with cluster.admin() as admin:
        (dirs,) = admin.describe_log_dirs([0]).values()
        assert not isinstance(dirs, Exception)
        offline = dirs[str(second_dir(cluster, 0))]
        assert offline.error is not None and offline.error.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert offline.replicas == {}
        assert dirs[str(cluster.brokers[0].log_dir)].error is None
        first = TopicPartitionReplica("bad", 0, 0)
        leader_dir = where(cluster, 0, "bad", 0)[0]
        if leader_dir == cluster.brokers[0].log_dir:  # a replica still online: refused too
            refused = admin.alter_replica_log_dirs({first: str(second_dir(cluster, 0))})[first]
            assert refused is not None and refused.code == ErrorCode.KAFKA_STORAGE_ERROR
    done = cli(
        "log-dirs", "--bootstrap-server", cluster.bootstrap_servers, "--describe",
        "--broker-list", "0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout.splitlines()[2])
    errors_by_dir = {d["logDir"]: d["error"] for d in document["brokers"][0]["logDirs"]}
    assert errors_by_dir == {
        str(cluster.brokers[0].log_dir): None,
        str(second_dir(cluster, 0)): "org.apache.kafka.common.errors.KafkaStorageException",
    }
    missing = cli(
        "log-dirs", "--bootstrap-server", cluster.bootstrap_servers, "--describe",
        "--broker-list", "0,5",
    )  # fmt: skip
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip() == (
        "ERROR: The given brokers do not exist from --broker-list: 5. Current existent brokers: 0"
    )
    no_describe = cli("log-dirs", "--bootstrap-server", cluster.bootstrap_servers)
    assert no_describe.returncode == 1
    assert no_describe.stderr.strip() == "Command must include option '--describe'"
