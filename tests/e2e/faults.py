"""Helpers of the e2e fault tests (test_faults.py): a continuous acks=all producer that records
every acknowledgement, the safety checks run after a fault, and raw reads of each broker's
partition files through ``docker exec``.

    with ContinuousProducer(topic, partitions) as load:   # a thread sending until stop()
        ...inject a fault...
    acked = load.stop()                 # flushes; every Ack(partition, offset, value, ...)
    assert_acked_readable(read_partitions(topic, partitions), acked, prefix=topic.encode())
    assert_replicas_agree(cluster, topic, partitions)
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import grpc

import minikafka
from minikafka.client.admin import TopicDescription, raise_first
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.records import encode_batch, iter_batch_headers
from tests.e2e.conftest import BROKER_IDS, ComposeCluster

T = TypeVar("T")

# Every broker, so the client bootstraps whichever one is down.
BOOTSTRAP = ",".join(f"127.0.0.1:{ComposeCluster.external_port(b)}" for b in BROKER_IDS)
DATA_DIR = "/var/lib/minikafka/data"
ZK_SESSION_TIMEOUT_S = 6.0  # docker/server.properties


def wait_for(condition: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll ``condition`` until it returns something truthy; AssertionError at the deadline.
    Exceptions from the condition count as "not yet" (brokers come and go during faults)."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = condition()
        except Exception as exc:  # a broker may be unreachable meanwhile
            value, last = None, exc
        else:
            last = value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"no {what} within {timeout:.0f} s (last: {last!r})")
        time.sleep(0.25)


def admin(avoid: int | None = None) -> minikafka.AdminClient:
    """An admin client bootstrapping from every broker but ``avoid``. A call gives its whole
    timeout to the first broker that does not answer, so a frozen broker first in the list
    would make every call time out."""
    bootstrap = [f"127.0.0.1:{ComposeCluster.external_port(b)}" for b in BROKER_IDS if b != avoid]
    return minikafka.AdminClient(bootstrap, request_timeout_ms=5_000)


def describe(topic: str, avoid: int | None = None) -> TopicDescription:
    with admin(avoid) as client:
        return client.describe_topics([topic], timeout_ms=5_000)[topic]


def create_topic(topic: str, partitions: int) -> TopicDescription:
    """Replication factor 3, min.insync.replicas=2; returns once every ISR is full."""
    with admin() as client:
        raise_first(
            client.create_topics(
                [minikafka.NewTopic(topic, partitions, 3, configs={"min.insync.replicas": "2"})]
            )
        )
    return wait_full_isr(topic, timeout=30)


def wait_full_isr(topic: str, timeout: float = 60) -> TopicDescription:
    """Every partition has a leader and all three replicas in its ISR."""

    def full() -> TopicDescription | None:
        described = describe(topic)
        ok = all(p.leader >= 0 and len(p.isr) == len(p.replicas) for p in described.partitions)
        return described if ok else None

    return wait_for(full, timeout, f"full ISRs of {topic}")


def controller_id(avoid: int | None = None) -> int:
    with admin(avoid) as client:
        return client.describe_cluster(timeout_ms=5_000).controller_id


# --- load -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ack:
    partition: int
    offset: int
    value: bytes
    sent_at: float  # time.monotonic() of send
    acked_at: float


@dataclass
class ContinuousProducer:
    """A thread producing ``<topic>-<seq>`` round-robin over ``partitions`` with an idempotent
    acks=all Producer, about ``rate`` records/s, recording every acknowledgement. Records whose
    delivery failed are counted, not retried by hand (the Producer retries within its delivery
    timeout). ``acks`` and ``failures`` are appended from the Producer's sender thread.
    ``bootstrap``: the compose cluster's brokers unless given (the integration tests' own)."""

    topic: str
    partitions: int
    rate: float = 200.0
    max_outstanding: int = 400
    acks: list[Ack] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    sent: int = 0
    bootstrap: str = BOOTSTRAP

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._outstanding = 0
        self._producer = minikafka.Producer(
            self.bootstrap,
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            request_timeout_ms=10_000,
            delivery_timeout_ms=120_000,
        )
        self._thread = threading.Thread(target=self._run, name=f"load-{self.topic}", daemon=True)

    def __enter__(self) -> ContinuousProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self._stop.is_set():
            self.stop()

    def _run(self) -> None:
        interval = 1.0 / self.rate
        next_send = time.monotonic()
        while not self._stop.is_set():
            with self._lock:
                busy = self._outstanding >= self.max_outstanding
            if busy:
                time.sleep(0.01)
                continue
            partition = self.sent % self.partitions
            value = b"%s-%08d" % (self.topic.encode(), self.sent)
            sent_at = time.monotonic()
            future = self._producer.send(self.topic, value, partition=partition)
            with self._lock:
                self._outstanding += 1
            future.add_callback(self._on_ack, value, sent_at)
            future.add_errback(self._on_error)
            self.sent += 1
            next_send = max(next_send + interval, time.monotonic() - 1.0)
            time.sleep(max(0.0, next_send - time.monotonic()))

    def _on_ack(self, value: bytes, sent_at: float, metadata: minikafka.RecordMetadata) -> None:
        ack = Ack(metadata.partition, metadata.offset, value, sent_at, time.monotonic())
        with self._lock:
            self.acks.append(ack)
            self._outstanding -= 1

    def _on_error(self, error: BaseException) -> None:
        with self._lock:
            self.failures.append(error)
            self._outstanding -= 1

    def acks_so_far(self) -> list[Ack]:
        with self._lock:
            return list(self.acks)

    def stop(self, timeout: float = 150) -> list[Ack]:
        """Stop sending, wait for every outstanding record's answer, close; the acks."""
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(timeout)
        self._producer.close(10)
        with self._lock:
            assert self._outstanding == 0, f"{self._outstanding} records unanswered"
            return list(self.acks)


def first_ack_after(
    acks: Iterable[Ack], partitions: Iterable[int], sent_after: float, since: float
) -> float | None:
    """Seconds from ``since`` to the first ack of a record sent after ``sent_after`` to one of
    ``partitions``; None when there is none yet."""
    wanted = set(partitions)
    times = [a.acked_at for a in acks if a.partition in wanted and a.sent_at >= sent_after]
    return min(times) - since if times else None


def produce_once_everywhere(topic: str, partitions: int, timeout: float = 60) -> None:
    """The cluster serves: a fresh idempotent acks=all producer gets one record per partition
    acknowledged."""
    with minikafka.Producer(BOOTSTRAP, acks="all", request_timeout_ms=10_000) as producer:
        futures = [producer.send(topic, b"probe-%d" % p, partition=p) for p in range(partitions)]
        for future in futures:
            future.result(timeout=timeout)


@dataclass(frozen=True)
class RawAnswer:
    partition: int
    value: bytes
    error_code: int  # ErrorCode, or -1 when the RPC itself failed (deadline, unreachable)
    base_offset: int


def raw_produce(
    broker_id: int, topic: str, partition: int, value: bytes, timeout_ms: int = 3_000
) -> RawAnswer:
    """One acks=all batch of one record sent straight to ``broker_id`` (no client, no retry, no
    leader lookup): what a client with stale metadata would ask of an old leader."""
    request = pb.ProduceRequest(
        acks=-1,
        timeout_ms=timeout_ms,
        topic_data=[
            pb.ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    pb.ProduceRequest.PartitionProduceData(
                        index=partition,
                        records=encode_batch([(int(time.time() * 1000), None, value, ())]),
                    )
                ],
            )
        ],
    )
    address = f"127.0.0.1:{ComposeCluster.external_port(broker_id)}"
    try:
        with grpc.insecure_channel(address) as channel:
            response = pb_grpc.DataStub(channel).Produce(request, timeout=timeout_ms / 1000 + 5)
    except grpc.RpcError:
        return RawAnswer(partition, value, -1, -1)
    answer = response.responses[0].partition_responses[0]
    return RawAnswer(partition, value, answer.error_code, answer.base_offset)


def diagnose(cluster: ComposeCluster, topic: str) -> str:
    """Each broker's own answer about ``topic`` (leader/ISR per partition, controller) and the
    tail of its log: for failure messages."""
    lines = []
    for broker_id in BROKER_IDS:
        address = f"127.0.0.1:{ComposeCluster.external_port(broker_id)}"
        try:
            with grpc.insecure_channel(address) as channel:
                answer = pb_grpc.MetadataStub(channel).Metadata(
                    pb.MetadataRequest(
                        topics=[pb.MetadataRequest.MetadataRequestTopic(name=topic)]
                    ),
                    timeout=2,
                )
            view = [
                (p.partition_index, p.leader_id, p.leader_epoch, list(p.isr_nodes))
                for t in answer.topics
                for p in sorted(t.partitions, key=lambda p: p.partition_index)
            ]
            lines.append(f"broker {broker_id}: controller {answer.controller_id}, {view}")
        except grpc.RpcError as exc:
            lines.append(f"broker {broker_id}: {exc.code().name}")
    for broker_id in BROKER_IDS:
        lines.append(f"--- broker {broker_id} log tail")
        lines.append(cluster.logs(cluster.service(broker_id), tail=60)[-8000:])
    return "\n".join(lines)


# --- checks ---------------------------------------------------------------------------------


def read_partitions(
    topic: str, partitions: int, timeout: float = 60, bootstrap: str = BOOTSTRAP
) -> dict[int, list[tuple[int, bytes]]]:
    """(offset, value) of every record of each partition, from the beginning to the end
    offsets (the high watermarks) as of the start of the read."""
    tps = [minikafka.TopicPartition(topic, p) for p in range(partitions)]
    consumer = minikafka.Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        read: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, (
                f"read stuck at {[consumer.position(tp) for tp in tps]} of {ends}"
            )
            for tp, records in consumer.poll(timeout_ms=500).items():
                for record in records:
                    if record.offset < ends[tp]:
                        read[tp.partition].append((record.offset, record.value or b""))
        return read
    finally:
        consumer.close(autocommit=False)


def _sequence(value: bytes) -> int:
    return int(value.rsplit(b"-", 1)[1])


def assert_acked_readable(
    read: dict[int, list[tuple[int, bytes]]], acked: Sequence[Ack], prefix: bytes
) -> None:
    """Every acknowledged record is in its partition at its offset, exactly once, and each
    partition holds the load's records in the order they were sent."""
    for partition, records in read.items():
        offsets = [o for o, _ in records]
        assert offsets == sorted(set(offsets)), f"partition {partition}: offsets not increasing"
        values = [v for _, v in records if v.startswith(prefix)]
        duplicates = {v for v, n in Counter(values).items() if n > 1}
        assert not duplicates, f"partition {partition}: stored twice: {sorted(duplicates)[:5]}"
        sequences = [_sequence(v) for v in values]
        assert sequences == sorted(sequences), f"partition {partition}: records out of order"
    stored = {(p, o): v for p, records in read.items() for o, v in records}
    lost = [a for a in acked if stored.get((a.partition, a.offset)) != a.value]
    assert not lost, (
        f"{len(lost)} of {len(acked)} acknowledged records not readable where acked, e.g. "
        + ", ".join(
            f"{a.value!r}@{a.partition}:{a.offset} (found {stored.get((a.partition, a.offset))!r})"
            for a in lost[:5]
        )
    )


@dataclass(frozen=True)
class ReplicaFiles:
    """One replica's partition as its files hold it."""

    log_end_offset: int
    high_watermark: int | None  # replication-offset-checkpoint; None when absent
    batches: tuple[tuple[int, bytes], ...]  # (next offset, batch bytes)

    def bytes_below(self, offset: int) -> bytes:
        return b"".join(data for next_offset, data in self.batches if next_offset <= offset)


def _docker_exec_bytes(cluster: ComposeCluster, service: str, script: str) -> bytes:
    result = subprocess.run(
        ["docker", "exec", cluster.container(service), "sh", "-c", script],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"{service}: {script}: {result.stderr.decode()[-500:]}"
    return result.stdout


def replica_files(
    cluster: ComposeCluster, broker_id: int, topic: str, partition: int
) -> ReplicaFiles:
    """The partition's segments (in base-offset order, concatenated) and its checkpointed HW,
    read in the broker's container."""
    service = cluster.service(broker_id)
    directory = f"{DATA_DIR}/{topic}-{partition}"
    # Segment names are 20-digit base offsets, so the shell's sorted glob is offset order.
    data = _docker_exec_bytes(cluster, service, f"cat {directory}/*.log")
    batches = tuple(
        (header.next_offset, data[pos : pos + header.size])
        for pos, header in iter_batch_headers(data)
    )
    checkpoint = _docker_exec_bytes(
        cluster, service, f"cat {DATA_DIR}/replication-offset-checkpoint || true"
    ).decode()
    high_watermark = None
    for line in checkpoint.splitlines()[2:]:
        name, number, offset = line.rsplit(" ", 2)
        if name == topic and int(number) == partition:
            high_watermark = int(offset)
    leo = batches[-1][0] if batches else 0
    return ReplicaFiles(leo, high_watermark, batches)


def assert_replicas_agree(
    cluster: ComposeCluster, topic: str, partitions: int, timeout: float = 60
) -> None:
    """Once the load has stopped and every ISR is full: on each partition all three replicas
    reach the same LEO and checkpointed HW (the leader's end offset), and hold the same bytes
    below it."""
    tps = [minikafka.TopicPartition(topic, p) for p in range(partitions)]
    consumer = minikafka.Consumer(bootstrap_servers=BOOTSTRAP)
    try:
        ends = {tp.partition: offset for tp, offset in consumer.end_offsets(tps).items()}
    finally:
        consumer.close(autocommit=False)
    for partition in range(partitions):
        end = ends[partition]

        def settled(p: int = partition, end: int = end) -> dict[int, ReplicaFiles] | None:
            files = {b: replica_files(cluster, b, topic, p) for b in BROKER_IDS}
            ok = all(f.log_end_offset == end and f.high_watermark == end for f in files.values())
            return files if ok else None

        try:
            files = wait_for(settled, timeout, f"{topic}-{partition} replicas at {end}")
        except AssertionError:
            files = {b: replica_files(cluster, b, topic, partition) for b in BROKER_IDS}
            raise AssertionError(
                f"{topic}-{partition}: end offset {end}, replicas (LEO, HW): "
                f"{ {b: (f.log_end_offset, f.high_watermark) for b, f in files.items()} }"
            ) from None
        images = {b: f.bytes_below(end) for b, f in files.items()}
        assert len(set(images.values())) == 1, (
            f"{topic}-{partition}: replicas differ below HW {end}: "
            f"{ {b: len(i) for b, i in images.items()} } bytes"
        )
