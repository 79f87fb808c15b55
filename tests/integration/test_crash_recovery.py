"""Recovery after SIGKILL with a real broker process (issue 16, item 5): the broker flushes
rolled segments and checkpoints the recovery point past them, so a restart re-reads only the
segments from there on; a byte flipped in an older segment cuts nothing, and readers of that
batch get CORRUPT_MESSAGE on both front doors (the client raises it) instead of a hang."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kio.index import load_request_schema

from minikafka.broker.storage.checkpoints import OffsetCheckpointFile
from minikafka.client.consumer.consumer import Consumer
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import CorruptRecordError, ErrorCode
from minikafka.proto.records import decode_records, iter_batch_headers
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka
from tests.integration.test_failover import cli, create_topic

TOPIC = "crashy"
BATCHES = 60
RECORDS_PER_BATCH = 20


def recovery_point(cluster: Cluster, broker_id: int) -> int:
    log_dir = cluster.brokers[broker_id].log_dir
    checkpoint = OffsetCheckpointFile(log_dir / "recovery-point-offset-checkpoint").read()
    return checkpoint.get(TopicPartition(TOPIC, 0), 0)


def kafka_fetch(cluster: Cluster, broker_id: int, offset: int) -> Any:
    """One partition of a Kafka-protocol Fetch v11 at ``offset``."""
    schema = __import__(load_request_schema(1, 11).__module__, fromlist=["FetchTopic"])
    topics = (
        schema.FetchTopic(
            topic=TOPIC,
            partitions=(
                schema.FetchPartition(
                    partition=0, fetch_offset=offset, partition_max_bytes=1 << 20
                ),
            ),
        ),
    )
    with RawKafka(cluster.brokers[broker_id].kafka_address) as connection:
        answer = connection.call(
            1,
            11,
            {
                "max_wait": datetime.timedelta(0),
                "min_bytes": 1,
                "topics": topics,
                "forgotten_topics_data": (),
                "session_id": 0,
                "session_epoch": 0,
            },
        )
    [partition] = answer.responses[0].partitions
    return partition


def test_flipped_byte_below_the_recovery_point_survives_a_crash(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(
        n_brokers=1,
        overrides={
            "zookeeper.session.timeout.ms": "4000",
            "log.flush.offset.checkpoint.interval.ms": "300",
        },
    )
    create_topic(cluster, TOPIC, replication_factor=1, configs={"segment.bytes": "4096"})
    for n in range(BATCHES):
        values = [b"r%06d" % (n * RECORDS_PER_BATCH + i) for i in range(RECORDS_PER_BATCH)]
        assert cluster.produce(TOPIC, 0, values, retry_s=10).ok
    total = BATCHES * RECORDS_PER_BATCH
    directory = cluster.brokers[0].log_dir / f"{TOPIC}-0"
    segments = sorted(directory.glob("*.log"))
    assert len(segments) >= 4, segments
    # The rolled segments are flushed and the recovery point checkpointed past them.
    active_base = int(segments[-1].stem)
    cluster.wait_for(
        lambda: recovery_point(cluster, 0) >= active_base,
        10,
        f"the recovery point to reach the active segment ({active_base})",
    )

    # One flipped byte inside the records of the second batch, in the first segment.
    first = segments[0]
    data = bytearray(first.read_bytes())
    [(_, first_batch), (position, bad)] = list(iter_batch_headers(bytes(data)))[:2]
    data[position + 70] ^= 0x01
    first.write_bytes(bytes(data))
    bad_offset = bad.base_offset
    assert bad_offset == first_batch.next_offset == RECORDS_PER_BATCH

    cluster.kill(0)
    cluster.start(0)
    cluster.wait_until_serving()
    cluster.wait_for(lambda: cluster.leader(TOPIC, 0) == 0, 20, "broker 0 to lead again")

    # Nothing was cut: every record after the damaged batch is still there.
    loaded = [e for e in cluster.brokers[0].log_events("log.loaded") if e["topic"] == TOPIC][-1]
    assert loaded["clean_shutdown"] is False
    assert loaded["log_end_offset"] == total
    assert loaded["segments_validated"] == 1  # only the segment holding the recovery point
    assert not cluster.brokers[0].log_events("log.recovery.truncated")
    after = cluster.fetch(0, TOPIC, 0, bad_offset + RECORDS_PER_BATCH)
    assert after.error_code == ErrorCode.NONE and after.high_watermark == total
    assert next(decode_records(after.records)).value == b"r%06d" % (bad_offset + RECORDS_PER_BATCH)

    # gRPC: up to the damage, then CORRUPT_MESSAGE at it.
    before = cluster.fetch(0, TOPIC, 0, 0)
    assert before.error_code == ErrorCode.NONE
    assert [r.offset for r in decode_records(before.records)] == list(range(bad_offset))
    answer = cluster.fetch(0, TOPIC, 0, bad_offset)
    assert answer.error_code == ErrorCode.CORRUPT_MESSAGE, answer
    assert f"offset {bad_offset}" in answer.error_message
    # The Kafka protocol: the same.
    assert kafka_fetch(cluster, 0, bad_offset).error_code == ErrorCode.CORRUPT_MESSAGE
    assert kafka_fetch(cluster, 0, bad_offset + RECORDS_PER_BATCH).error_code == ErrorCode.NONE
    # The broker says so, one structured line per refused read.
    events = cluster.brokers[0].log_events("log.read.corrupt_batch")
    assert events and events[-1]["level"] == "error"
    assert (events[-1]["topic"], events[-1]["fetch_offset"]) == (TOPIC, bad_offset)

    # The client: records up to the damage, then an error rather than a hang.
    tp = TopicPartition(TOPIC, 0)
    with Consumer(bootstrap_servers=cluster.bootstrap_servers) as consumer:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        read: list[int] = []
        with pytest.raises(CorruptRecordError, match=f"offset {bad_offset}"):
            for _ in range(40):
                read.extend(r.offset for r in consumer.poll(timeout_ms=250).get(tp, []))
        assert read == list(range(bad_offset))
        # Seeking past the damaged batch goes on with the rest.
        consumer.seek(tp, bad_offset + RECORDS_PER_BATCH)
        rest = consumer.poll(timeout_ms=5000).get(tp, [])
        assert rest and rest[0].offset == bad_offset + RECORDS_PER_BATCH

    # The console consumer: the records before the damage, then one error line and the
    # count, as Kafka's.
    result = cli(
        "consume",
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "--topic",
        TOPIC,
        "--partition",
        "0",
        "--offset",
        "earliest",
        "--timeout-ms",
        "10000",
    )
    assert result.returncode != 0
    assert result.stdout.splitlines() == [f"r{n:06d}" for n in range(bad_offset)]
    error, total_line = result.stderr.strip().splitlines()
    assert "CORRUPT_MESSAGE" in error and f"offset {bad_offset}" in error, error
    assert total_line == f"Processed a total of {bad_offset} messages"
