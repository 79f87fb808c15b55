"""The producer on a topic with a small ``segment.bytes`` (64 KiB, common for compacted topics):
one batch per partition per request, and a batch the leader refuses as too large
(RECORD_LIST_TOO_LARGE) split and sent again, so every record is acknowledged, once, in order,
whatever linger.ms and batch.size let a batch grow to. Real broker processes and ZooKeeper."""

from __future__ import annotations

import logging

import pytest

from minikafka.client.admin import NewTopic
from minikafka.client.producer.producer import Producer
from minikafka.proto.errors import ErrorCode, KafkaError
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

TOPIC = "kv"
SEGMENT_BYTES = 65536
RECORDS = 1000  # about 950 KB of keys and values


@pytest.mark.parametrize("idempotent", [True, False])
def test_a_batch_larger_than_segment_bytes_is_split_and_every_record_lands(
    cluster_factory: ClusterFactory, caplog: pytest.LogCaptureFixture, idempotent: bool
) -> None:
    cluster = cluster_factory(n_brokers=1)
    with cluster.admin() as admin:
        created = admin.create_topics(
            [
                NewTopic(
                    TOPIC,
                    1,
                    1,
                    configs={"cleanup.policy": "compact", "segment.bytes": str(SEGMENT_BYTES)},
                )
            ]
        )
    assert created[TOPIC] is None
    cluster.wait_for(lambda: cluster.leader(TOPIC, 0) == 0, what=f"a leader of {TOPIC}-0")
    records = [(f"key-{i:04}".encode(), bytes([i % 251]) * 900) for i in range(RECORDS)]
    caplog.set_level(logging.WARNING, logger="minikafka.client.producer.sender")
    with Producer(
        bootstrap_servers=cluster.bootstrap_servers,
        acks="all",
        linger_ms=1000,
        batch_size=1_048_576,
        enable_idempotence=idempotent,
    ) as producer:
        futures = [producer.send(TOPIC, value, key=key) for key, value in records]
        producer.flush(timeout=60)
    assert [f.result(0).offset for f in futures] == list(range(RECORDS))
    splits = [r for r in caplog.records if r.getMessage().startswith("producer.batch_split")]
    assert splits, "the first batch (about 950 KB) went to the leader whole"

    stored = cluster.fetch_all(TOPIC, 0)
    assert [(r.offset, r.key, r.value) for r in stored] == [
        (i, key, value) for i, (key, value) in enumerate(records)
    ]


def test_a_record_too_large_alone_fails_and_the_rest_of_its_batch_lands(
    cluster_factory: ClusterFactory,
) -> None:
    # An idempotent producer's batch with one record above max.message.bytes: split, that
    # record's piece fails with MESSAGE_TOO_LARGE and the producer bumps its epoch (its
    # sequence numbers now have a gap); the piece behind it must still be written, not be
    # refused for the gap (OUT_OF_ORDER_SEQUENCE_NUMBER), as Kafka restarts the sequences
    # of the pieces not yet written.
    cluster = cluster_factory(n_brokers=1)
    with cluster.admin() as admin:
        created = admin.create_topics(
            [NewTopic("limited", 1, 1, configs={"max.message.bytes": "2000"})]
        )
    assert created["limited"] is None
    cluster.wait_for(lambda: cluster.leader("limited", 0) == 0, what="a leader of limited-0")
    values = [b"a" * 100, b"b" * 3000, b"c" * 100, b"d" * 100]
    with Producer(
        bootstrap_servers=cluster.bootstrap_servers,
        acks="all",
        linger_ms=1000,
        enable_idempotence=True,
    ) as producer:
        futures = [producer.send("limited", value) for value in values]
        producer.flush(timeout=30)
        after = producer.send("limited", b"e" * 100)
        producer.flush(timeout=30)
    assert futures[0].result(0).offset == 0
    refused = futures[1].exception(0)
    assert isinstance(refused, KafkaError) and refused.code is ErrorCode.MESSAGE_TOO_LARGE
    assert [f.exception(0) for f in futures[2:]] == [None, None]
    assert [f.result(0).offset for f in (*futures[2:], after)] == [1, 2, 3]
    stored = cluster.fetch_all("limited", 0)
    assert [r.value for r in stored] == [b"a" * 100, b"c" * 100, b"d" * 100, b"e" * 100]
