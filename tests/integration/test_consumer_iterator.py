"""``for record in consumer``: the position follows the records handed out one by one, so a
commit in the middle of a polled batch covers exactly what the application was given."""

from __future__ import annotations

import pytest

from minikafka.client.admin import NewTopic, raise_first
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

TOPIC = "events"
TP = TopicPartition(TOPIC, 0)


def test_commit_mid_batch_covers_what_was_handed_out_and_nothing_more(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=1, overrides={"offsets.topic.num.partitions": "1"})
    bootstrap = cluster.bootstrap_servers
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic(TOPIC, 1, 1)]))
    cluster.wait_for(lambda: cluster.leader(TOPIC, 0) >= 0, what="a leader")
    with Producer(bootstrap) as producer:
        for i in range(1000):
            producer.send(TOPIC, str(i).encode())
        producer.flush()

    def consumer(**config: object) -> Consumer:
        return Consumer(
            TOPIC,
            bootstrap_servers=bootstrap,
            group_id="billing",
            auto_offset_reset="earliest",
            max_poll_records=100,
            consumer_timeout_ms=10_000,
            **config,  # type: ignore[arg-type]
        )

    # Manual commit after the 250th record, in the middle of the third polled batch; then the
    # member goes away without committing again, as after a crash.
    first = consumer(enable_auto_commit=False)
    handed_out = []
    for record in first:
        handed_out.append(record.offset)
        if len(handed_out) == 250:
            first.commit()
            assert first.position(TP) == 250
            break
    assert handed_out == list(range(250))
    assert first.committed(TP) == 250
    first.close()  # no auto commit: nothing more is stored

    # The next member resumes at the first record not handed out; auto commit on close
    # likewise stores the position of the last record given, not the end of its batch.
    second = consumer(enable_auto_commit=True)
    resumed = []
    for record in second:
        resumed.append(record.offset)
        if len(resumed) == 30:
            break
    assert resumed == list(range(250, 280))
    second.close()

    with consumer(enable_auto_commit=False) as third:
        assert third.committed(TP) == 280
        assert next(iter(third)).offset == 280
