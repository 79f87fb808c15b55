"""Issue 16, items 2 and 6, on real broker processes: a poison batch (a header naming
compression codec 5 or 7, CRC valid) is refused and stores nothing; one stored by an older
version is reported by every reader in one line; random bytes as an RPC body are
INVALID_ARGUMENT; fetches Kafka refuses get Kafka's errors."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import grpc
import pytest

from minikafka.client.admin import NewTopic, raise_first
from minikafka.client.consumer.consumer import Consumer
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import raw_records
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode, UnsupportedCompressionTypeError
from minikafka.proto.records import iter_batch_headers
from minikafka.spark.planner import OffsetRange
from minikafka.spark.reader import ReadSettings, read_range
from tests.batches import poison_batch
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

TOPIC = "poison"


def minikafka(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka", *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def produce_raw(
    cluster: Cluster, broker_id: int, records: bytes
) -> pb.ProduceResponse.PartitionProduceResponse:
    request = pb.ProduceRequest(
        acks=-1,
        timeout_ms=5_000,
        topic_data=[
            pb.ProduceRequest.TopicProduceData(
                name=TOPIC,
                partition_data=[pb.ProduceRequest.PartitionProduceData(index=0, records=records)],
            )
        ],
    )
    stub = pb_grpc.DataStub(cluster.channel(broker_id))
    return stub.Produce(request, timeout=15).responses[0].partition_responses[0]


def create_topic(cluster: Cluster, replication_factor: int) -> None:
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic(TOPIC, 1, replication_factor)]))
    cluster.wait_for(lambda: len(cluster.isr(TOPIC, 0)) == replication_factor, 30, "a full ISR")


def consume_values(cluster: Cluster, count: int) -> list[bytes]:
    result = minikafka(
        "consume", "--bootstrap-server", cluster.bootstrap_servers, "--topic", TOPIC,
        "--from-beginning", "--max-messages", str(count), "--timeout-ms", "20000",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [line.encode() for line in result.stdout.splitlines()]


def test_the_poison_batch_over_grpc(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=2)
    create_topic(cluster, 2)
    assert cluster.produce(TOPIC, 0, [b"one", b"two"], retry_s=10).ok
    leader = cluster.leader(TOPIC, 0)
    for codec in (5, 7):
        answer = produce_raw(cluster, leader, poison_batch(codec))
        assert answer.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, answer
        assert answer.base_offset == -1
        assert f"compression codec {codec}" in answer.error_message
    assert cluster.produce(TOPIC, 0, [b"three"]).ok  # the partition goes on

    # Readers: the Python consumer, the console consumer, the Spark reader.
    assert [r.value for r in cluster.fetch_all(TOPIC, 0)] == [b"one", b"two", b"three"]
    assert consume_values(cluster, 3) == [b"one", b"two", b"three"]
    rows = [
        row["value"]
        for batch in read_range(
            OffsetRange(TOPIC, 0, 0, 3), ReadSettings(cluster.bootstrap_servers)
        )
        for row in batch.to_pylist()
    ]
    assert rows == [b"one", b"two", b"three"]

    # Nothing of the refused batches reached a replica's files, and both replicas agree
    # (the acks=all produces above were acknowledged with both brokers in the ISR).
    assert sorted(cluster.isr(TOPIC, 0)) == [0, 1]  # ISR order is not meaningful
    for broker_id in (0, 1):
        assert cluster.stop(broker_id) == 0
    states = [cluster.replica_state(b, TOPIC, 0) for b in (0, 1)]
    assert states[0].log_end_offset == states[1].log_end_offset == 3
    assert states[0].batches == states[1].batches
    for _, _, data in states[0].batches:
        [(_, header)] = list(iter_batch_headers(data))
        assert header.attributes & 0x07 == 0
    segment = sorted((cluster.brokers[leader].log_dir / f"{TOPIC}-0").glob("*.log"))[-1]
    dumped = minikafka("dump-log", "--files", str(segment), "--print-data-log")
    assert dumped.returncode == 0 and "Traceback" not in dumped.stdout + dumped.stderr
    assert "unknown(" not in dumped.stdout


@pytest.fixture
def stored_poison(cluster_factory: ClusterFactory) -> Iterator[Cluster]:
    """One broker whose partition holds, at offsets 2-3, a codec-5 batch that an older
    version accepted (written into the segment while the broker was stopped), then a good
    record at offset 4."""
    cluster = cluster_factory(n_brokers=1)
    create_topic(cluster, 1)
    assert cluster.produce(TOPIC, 0, [b"one", b"two"], retry_s=10).ok
    assert cluster.stop(0) == 0
    segment = sorted((cluster.brokers[0].log_dir / f"{TOPIC}-0").glob("*.log"))[-1]
    with segment.open("ab") as log:
        log.write(poison_batch(5, base_offset=2, count=2))
    cluster.start(0)
    cluster.wait_until_serving()
    cluster.wait_for(lambda: cluster.leader(TOPIC, 0) == 0, 30, "broker 0 leading again")
    assert cluster.produce(TOPIC, 0, [b"after"], retry_s=20).base_offset == 4
    yield cluster


def test_a_stored_poison_batch_is_one_clear_line_for_every_reader(stored_poison: Cluster) -> None:
    cluster = stored_poison
    expected = (
        f"cannot read {TOPIC}-0 at offset 2: record batch at offset 2 names compression codec 5"
    )

    # The client Consumer: the records before it, then an error with a message, every poll.
    with Consumer(
        bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest"
    ) as consumer:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        values: list[bytes | None] = []
        deadline = time.monotonic() + 20
        while len(values) < 2 and time.monotonic() < deadline:
            values += [r.value for r in consumer.poll(timeout_ms=500).get(tp, [])]
        assert values == [b"one", b"two"]
        for _ in range(2):
            with pytest.raises(UnsupportedCompressionTypeError) as info:
                consumer.poll(timeout_ms=5_000)
            assert expected in str(info.value)
        consumer.seek(tp, 4)  # past it, as the message says
        deadline = time.monotonic() + 20
        after: list[bytes | None] = []
        while not after and time.monotonic() < deadline:
            after = [r.value for r in consumer.poll(timeout_ms=500).get(tp, [])]
        assert after == [b"after"]

    # minikafka consume: what it could read, then one line and status 1.
    result = minikafka(
        "consume", "--bootstrap-server", cluster.bootstrap_servers, "--topic", TOPIC,
        "--from-beginning", "--timeout-ms", "20000",
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["one", "two"]
    errors = result.stderr.splitlines()
    assert len(errors) == 2, result.stderr  # the error, then the count
    assert errors[0].startswith(
        "ERROR Error processing message, terminating consumer process: "
        "UNSUPPORTED_COMPRESSION_TYPE (76): " + expected
    ), errors[0]
    assert errors[1] == "Processed a total of 2 messages"

    # The Spark reader: the task fails with that message, no ValueError; a job reports it as
    # its last line (Spark logs what it logs before that).
    with pytest.raises(UnsupportedCompressionTypeError, match=expected):
        list(read_range(OffsetRange(TOPIC, 0, 0, 5), ReadSettings(cluster.bootstrap_servers)))
    job = subprocess.run(
        [
            sys.executable, "-m", "minikafka.spark.topic_stats", "--master", "local[1]",
            "--bootstrap-server", cluster.bootstrap_servers, "--topic", TOPIC,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert job.returncode == 1, job.stderr[-3000:]
    last = job.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: UNSUPPORTED_COMPRESSION_TYPE (76): " + expected), last
    assert "PythonException" not in last


def _raw_unary(cluster: Cluster, method: str) -> grpc.RpcError:
    call: grpc.UnaryUnaryMultiCallable[bytes, bytes]
    call = cluster.channel(0).unary_unary(method, request_serializer=None)
    with pytest.raises(grpc.RpcError) as info:
        call(b"\xff\xfe\x00 not a protobuf message \x01", timeout=10)
    return info.value


def test_random_bytes_as_an_rpc_body_are_invalid_argument(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1)
    create_topic(cluster, 1)
    for method, message in (
        ("/minikafka.v1.Data/Produce", "minikafka.v1.ProduceRequest"),
        ("/minikafka.v1.Metadata/Metadata", "minikafka.v1.MetadataRequest"),
        ("/minikafka.v1.Control/LeaderAndIsr", "minikafka.v1.LeaderAndIsrRequest"),
    ):
        error = _raw_unary(cluster, method)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, error)
        assert message in (error.details() or ""), error.details()
    for method, message in (
        ("/minikafka.v1.Data/ProduceStream", "minikafka.v1.ProduceRequest"),
        ("/minikafka.v1.Data/FetchStream", "minikafka.v1.FetchRequest"),
    ):
        stream: grpc.StreamStreamMultiCallable[bytes, bytes]
        stream = cluster.channel(0).stream_stream(method, request_serializer=None)
        with pytest.raises(grpc.RpcError) as info:
            list(stream(iter([b"\xff\xfe\x00 garbage"]), timeout=10))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, info.value)
        assert message in (info.value.details() or "")
    # RawData (proto/raw_records.py): its framing, or its protobuf half, refused the same way
    for method, message in (
        (raw_records.PRODUCE, "header length"),
        (raw_records.FETCH, "minikafka.v1.FetchRequest"),
    ):
        error = _raw_unary(cluster, method)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, error)
        assert message in (error.details() or ""), error.details()
    for method, message in (
        (raw_records.PRODUCE_STREAM, "header length"),
        (raw_records.FETCH_STREAM, "minikafka.v1.FetchRequest"),
    ):
        stream = cluster.channel(0).stream_stream(method, request_serializer=None)
        with pytest.raises(grpc.RpcError) as info:
            list(stream(iter([b"\xff\xfe\x00 garbage"]), timeout=10))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (method, info.value)
        assert message in (info.value.details() or "")
    assert cluster.produce(TOPIC, 0, [b"still fine"], retry_s=10).ok
    assert cluster.brokers[0].running


def test_fetches_kafka_refuses_get_kafkas_errors(cluster_factory: ClusterFactory) -> None:
    # gRPC replication: these fetches go to the gRPC listener, which then serves replicas too.
    cluster = cluster_factory(n_brokers=1, replication="grpc")
    create_topic(cluster, 1)
    assert cluster.produce(TOPIC, 0, [b"one"], retry_s=10).ok

    def fetch(replica_id: int = -1, max_bytes: int = 1 << 20) -> pb.FetchResponse.PartitionData:
        request = pb.FetchRequest(
            replica_id=replica_id,
            max_bytes=max_bytes,
            topics=[
                pb.FetchRequest.FetchTopic(
                    topic=TOPIC,
                    partitions=[
                        pb.FetchRequest.FetchPartition(
                            partition=0, current_leader_epoch=-1, partition_max_bytes=1 << 20
                        )
                    ],
                )
            ],
        )
        stub = pb_grpc.DataStub(cluster.channel(0))
        return stub.Fetch(request, timeout=10).responses[0].partitions[0]

    negative = fetch(max_bytes=-1)
    assert negative.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert negative.error_message.startswith(f"Invalid max size -1 for log read from {TOPIC}-0")
    assert negative.records == b""
    stranger = fetch(replica_id=42)  # no such broker, no follower of the partition
    assert stranger.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert "replica 42 is not a follower" in stranger.error_message
    assert stranger.records == b""
    assert fetch().error_code == ErrorCode.NONE
