"""A full disk under a partition leader (KIP-112), with real broker processes.

Broker 0's ``log.dirs`` is a small tmpfs; while an idempotent acks=all producer writes to the
partition broker 0 leads, a filler file takes the rest of the tmpfs. The next append fails
with ENOSPC: broker 0 takes the dir offline (one log line), answers KAFKA_STORAGE_ERROR, tells
the controller (/log_dir_event_notification) and, with no log dir left, halts. Leadership
moves to another ISR member within the ZooKeeper session timeout, the producer goes on there,
and once the filler is gone broker 0 restarts, recovers its torn log and rejoins the ISR.

With a second, healthy log dir the broker stays up: only the replicas on the full dir go
offline, through the controller's LeaderAndIsr round trip, and its other partitions go on.

Mounting needs root: the tests are skipped without it (failed under CI=true).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from minikafka.client.admin import NewTopic, raise_first
from minikafka.proto.cluster_state import PartitionState
from minikafka.proto.errors import ErrorCode
from tests.e2e.faults import ContinuousProducer, assert_acked_readable, read_partitions
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka

pytestmark = pytest.mark.integration

TOPIC = "disk"
SESSION_TIMEOUT_MS = 6000
TMPFS_SIZE = "16m"


def _running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def _require_mounts() -> None:
    reason = None
    if os.geteuid() != 0:
        reason = "mounting a tmpfs log dir needs root"
    elif shutil.which("mount") is None or shutil.which("umount") is None:
        reason = "mount/umount are not installed"
    if reason is not None:
        if _running_in_ci():
            pytest.fail(f"CI=true and {reason}", pytrace=False)
        pytest.skip(reason)


def _mount_tmpfs(directory: Path, size: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        message = f"cannot mount a tmpfs at {directory}: {result.stderr.strip()}"
        if _running_in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def _fill(directory: Path) -> Path:
    """Write a filler file until the filesystem is full; its path."""
    filler = directory / "filler"
    chunk = b"\0" * (64 * 1024)
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError:
            pass
        small = b"\0" * 512
        try:
            while True:
                f.write(small)
        except OSError:
            pass
    return filler


def _kafka_door_errors(address: str, topic: str) -> dict[str, int]:
    """Produce (v8), Fetch (v11) and ListOffsets (v7) of partition 0 on the Kafka listener."""
    with RawKafka(address) as raw:
        produce = raw.call(
            0,
            8,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 5000,
                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": None}]}],
            },
        )
        fetch = raw.call(
            1,
            11,
            {
                "replica_id": -1,
                "max_wait": 0,
                "min_bytes": 1,
                "max_bytes": 1 << 20,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 16}
                        ],
                    }
                ],
                "forgotten_topics_data": [],
            },
        )
        offsets = raw.call(
            2,
            7,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                        ],
                    }
                ],
            },
        )
    return {
        "produce": produce.responses[0].partition_responses[0].error_code,
        "fetch": fetch.responses[0].partitions[0].error_code,
        "list_offsets": offsets.topics[0].partitions[0].error_code,
    }


def test_a_full_log_dir_moves_leadership_and_loses_nothing(
    cluster_factory: ClusterFactory,
) -> None:
    _require_mounts()
    cluster = cluster_factory(
        n_brokers=3,
        overrides={
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "min.insync.replicas": "2",
        },
        start=False,
    )
    victim = cluster.brokers[0]
    _mount_tmpfs(victim.log_dir, TMPFS_SIZE)
    try:
        cluster.start_all()
        cluster.wait_until_serving()
        with cluster.admin() as admin:
            raise_first(admin.create_topics([NewTopic(TOPIC, 1, 3, {0: [0, 1, 2]})]))
        cluster.wait_for(
            lambda: cluster.leader(TOPIC, 0) == 0 and len(cluster.isr(TOPIC, 0)) == 3,
            what="broker 0 leading with a full ISR",
        )

        # An idempotent acks=all producer; a failed delivery is allowed, a lost ack is not.
        with ContinuousProducer(TOPIC, 1, bootstrap=cluster.bootstrap_servers) as load:
            cluster.wait_for(
                lambda: len(load.acks_so_far()) >= 300, 30, "300 acks before the disk fills"
            )
            filler = _fill(victim.log_dir)
            filled_at = time.monotonic()
            cluster.wait_for(
                lambda: cluster.leader(TOPIC, 0) in (1, 2),
                SESSION_TIMEOUT_MS / 1000,
                "leadership to leave the broker with the full disk",
            )
            moved_after = time.monotonic() - filled_at
            state = cluster.partition_state(TOPIC, 0)
            assert state is not None and 0 not in state.isr, state
            # With its only log dir offline the broker halts.
            cluster.wait_for(lambda: not victim.running, 30, "broker 0 to halt")
            assert victim.process is not None and victim.process.returncode == 1
            count = len(load.acks_so_far())
            cluster.wait_for(
                lambda: len(load.acks_so_far()) >= count + 300, 45, "acks on the new leader"
            )

            offline = victim.log_events("log_dir.offline")
            assert len(offline) == 1, offline
            assert offline[0]["log_dir"] == str(victim.log_dir)
            assert offline[0]["errno"] == 28
            assert victim.log_events("produce.failed") == []  # no UNKNOWN_SERVER_ERROR
            assert victim.log_events("broker_halting")
            assert "Traceback" not in victim.output_file.read_text("utf-8", "replace")

            # Space returns: broker 0 restarts cleanly and catches up.
            filler.unlink()
            cluster.start(0)
            cluster.wait_until_serving()
            cluster.wait_for(
                lambda: len(cluster.isr(TOPIC, 0)) == 3, 45, "broker 0 back in the ISR"
            )
            count = len(load.acks_so_far())
            cluster.wait_for(
                lambda: len(load.acks_so_far()) >= count + 100, 30, "acks after the restart"
            )
            acked = load.stop()  # every record sent is answered
        assert moved_after < SESSION_TIMEOUT_MS / 1000

        read = read_partitions(TOPIC, 1, bootstrap=cluster.bootstrap_servers)
        assert_acked_readable(read, acked, prefix=f"{TOPIC}-".encode())  # lost, twice, order

        # Every replica holds the same bytes below the high watermark.
        hw = read[0][-1][0] + 1  # the high watermark the read went up to
        cluster.wait_for(
            lambda: all(
                cluster.replica_state(b, TOPIC, 0).log_end_offset >= hw for b in cluster.brokers
            ),
            30,
            "every replica to reach the high watermark",
        )
        images = {b: cluster.replica_state(b, TOPIC, 0).bytes_below(hw) for b in cluster.brokers}
        assert len(set(images.values())) == 1, {b: len(i) for b, i in images.items()}
    finally:
        cluster.close()
        subprocess.run(["umount", "-l", str(victim.log_dir)], capture_output=True)


def test_a_full_log_dir_beside_a_healthy_one_takes_only_its_replicas_offline(
    cluster_factory: ClusterFactory,
) -> None:
    _require_mounts()
    cluster = cluster_factory(
        n_brokers=3,
        overrides={"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS)},
        start=False,
    )
    victim = cluster.brokers[0]
    full, healthy = victim.root / "full", victim.root / "healthy"
    _mount_tmpfs(full, TMPFS_SIZE)
    try:
        # New logs go to the dir with the fewest partitions, the first on a tie: "disk-0"
        # to the tmpfs, "other-0" to the healthy dir.
        cluster.write_config(0, {"log.dirs": f"{full},{healthy}"})
        cluster.start_all()
        cluster.wait_until_serving()
        with cluster.admin() as admin:
            raise_first(admin.create_topics([NewTopic("disk", 1, 3, {0: [0, 1, 2]})]))
            cluster.wait_for(lambda: (full / "disk-0").is_dir(), what="disk-0 on the tmpfs")
            raise_first(admin.create_topics([NewTopic("other", 1, 3, {0: [0, 1, 2]})]))
        cluster.wait_for(lambda: (healthy / "other-0").is_dir(), what="other-0 on the disk")
        for topic in ("disk", "other"):
            cluster.wait_for(
                lambda t=topic: len(cluster.isr(t, 0)) == 3,  # type: ignore[misc]
                what=f"a full ISR for {topic}",
            )
            assert cluster.produce(topic, 0, [b"before"], to=0).ok

        filler = _fill(full)
        refused = cluster.produce("disk", 0, [b"x" * 4096], to=0)
        assert refused.error == ErrorCode.KAFKA_STORAGE_ERROR, refused

        def moved() -> PartitionState | None:
            s = cluster.partition_state("disk", 0)
            return s if s is not None and s.leader in (1, 2) and 0 not in s.isr else None

        state = cluster.wait_for(
            moved,
            SESSION_TIMEOUT_MS / 1000,
            "disk-0's leadership and ISR to leave broker 0",
        )
        assert victim.running  # a dir is left: the broker stays
        assert cluster.produce("disk", 0, [b"after"], retry_s=10).ok
        # Its replica on the healthy dir keeps leading and serving.
        other = cluster.partition_state("other", 0)
        assert other is not None and other.leader == 0 and 0 in other.isr
        assert cluster.produce("other", 0, [b"after"], to=0).ok
        # Broker 0 answers KAFKA_STORAGE_ERROR for the offline replica, and the metadata of
        # the others lists it offline.
        fetched = cluster.fetch(0, "disk", 0, 0)
        assert fetched.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert _kafka_door_errors(victim.kafka_address, "disk") == {
            "produce": ErrorCode.KAFKA_STORAGE_ERROR,
            "fetch": ErrorCode.KAFKA_STORAGE_ERROR,
            "list_offsets": ErrorCode.KAFKA_STORAGE_ERROR,
        }
        assert _kafka_door_errors(victim.kafka_address, "other")["fetch"] == ErrorCode.NONE
        metadata = cluster.metadata(state.leader, ["disk"])
        assert list(metadata.topics[0].partitions[0].offline_replicas) == [0]
        assert len(victim.log_events("log_dir.offline")) == 1
        controller = cluster.brokers[cluster.wait_for(cluster.controller_id)]
        assert controller.log_events("replicas_offline")
        assert cluster.zk.get_log_dir_event_notification_names() == []
        assert "Traceback" not in victim.output_file.read_text("utf-8", "replace")

        # Fixed disk: a restart brings the replica back into the ISR.
        filler.unlink()
        assert cluster.stop(0) == 0
        cluster.start(0)
        cluster.wait_until_serving()
        cluster.wait_for(lambda: 0 in cluster.isr("disk", 0), 45, "broker 0 back in the ISR")
        assert [r.value for r in cluster.fetch_all("disk", 0)] == [b"before", b"after"]
    finally:
        cluster.close()
        subprocess.run(["umount", "-l", str(full)], capture_output=True)
