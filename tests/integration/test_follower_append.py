"""A follower appends whatever its leader accepted: ``segment.bytes`` lowered under load, below
what one replica fetch carries, leaves every replica in the ISR with the leader's log, split
into segments between batches. A follower behind the change once refused every fetch of the
leader's older, larger segment with RECORD_LIST_TOO_LARGE and stayed out of the ISR for good.
Real broker processes and ZooKeeper."""

from __future__ import annotations

import threading
import time

import pytest

from minikafka.client.admin import NewTopic
from minikafka.client.producer.producer import Producer
from minikafka.proto.records import iter_batch_headers
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

TOPIC = "lowered"
SEGMENT_BYTES = 65536  # far below one follower fetch (replica.fetch.max.bytes, 1 MiB)
VALUE = b"v" * 2000


class Load:
    """A producer thread sending VALUE records at about 200 KB/s (acks=1, so the leader runs
    ahead of a stopped follower) until stopped; counts the acknowledged ones."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.acked = 0
        self.failed: list[BaseException] = []
        self._stop = threading.Event()
        # Requests under segment.bytes: a leader refuses a larger produce (as Kafka's does).
        self._producer = Producer(
            bootstrap_servers=bootstrap_servers,
            acks=1,
            linger_ms=5,
            batch_size=16384,
            max_request_size=32768,
        )
        self._thread = threading.Thread(target=self._run, name="load", daemon=True)
        self._thread.start()

    def _acked(self, _metadata: object) -> None:
        self.acked += 1  # callbacks run on the producer's one sender thread

    def _run(self) -> None:
        while not self._stop.is_set():
            for _ in range(10):
                future = self._producer.send(TOPIC, VALUE)
                future.add_callback(self._acked)
                future.add_errback(self.failed.append)
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._producer.flush(timeout=60)
        self._producer.close()


def test_followers_stay_in_sync_after_segment_bytes_is_lowered_under_load(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=3)
    with cluster.admin() as admin:
        created = admin.create_topics([NewTopic(TOPIC, replica_assignment={0: [0, 1, 2]})])
    assert created[TOPIC] is None
    cluster.wait_for(
        lambda: cluster.leader(TOPIC, 0) == 0 and len(cluster.isr(TOPIC, 0)) == 3,
        timeout_s=30,
        what=f"{TOPIC}-0 led by 0 with three replicas in sync",
    )
    load = Load(cluster.bootstrap_servers)
    try:
        cluster.wait_for(lambda: load.acked >= 50, timeout_s=30, what="50 records acked")
        # Broker 2 falls behind by far more than the segment.bytes to come: what it has to
        # fetch is in the leader's segment from before the change, read a fetch at a time.
        cluster.stop(2)
        stopped_at = load.acked
        cluster.wait_for(
            lambda: (load.acked - stopped_at) * len(VALUE) > 2**20,
            timeout_s=60,
            what="the leader 1 MiB ahead of broker 2",
        )
        with cluster.admin() as admin:
            admin.incremental_alter_configs(TOPIC, {"segment.bytes": str(SEGMENT_BYTES)})
        changed_at = load.acked
        cluster.wait_for(
            lambda: load.acked - changed_at >= 50, timeout_s=30, what="50 more records acked"
        )
        cluster.start(2)  # it reads segment.bytes from ZooKeeper as it opens the log
        cluster.wait_for(
            lambda: len(cluster.isr(TOPIC, 0)) == 3,
            timeout_s=60,
            what=f"broker 2 back in the ISR of {TOPIC}-0 under load\n" + cluster.describe(),
        )
        time.sleep(1)  # and the followers keep up with the load across the lowered size
    finally:
        load.stop()
    assert not load.failed, load.failed[:3]

    cluster.wait_for(
        lambda: len(cluster.isr(TOPIC, 0)) == 3,
        timeout_s=30,
        what=f"every replica in the ISR of {TOPIC}-0\n" + cluster.describe(),
    )
    for broker_id in (1, 2):
        refused = cluster.brokers[broker_id].log_events("fetcher.append_failed")
        assert not refused, refused[:3]
    for broker_id in (0, 1, 2):
        cluster.stop(broker_id)
    leader = cluster.replica_state(0, TOPIC, 0)
    assert leader.log_end_offset == load.acked
    for follower in (1, 2):
        assert cluster.replica_state(follower, TOPIC, 0).batches == leader.batches
    # Broker 2's catch-up through the leader's older, larger segment was split between
    # batches: every segment it wrote since is at most segment.bytes and starts at a batch.
    directory = cluster.brokers[2].log_dir / f"{TOPIC}-0"
    segments = sorted(directory.glob("*.log"), key=lambda p: int(p.stem))
    assert len(segments) > 2**20 // SEGMENT_BYTES
    for path in segments[1:]:
        data = path.read_bytes()
        assert 0 < len(data) <= SEGMENT_BYTES
        assert next(iter_batch_headers(data))[1].base_offset == int(path.stem)
