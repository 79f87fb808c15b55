"""Transactions (KIP-98) under faults, with confluent-kafka against real broker processes: the
Safety section of issue 33.

* Consume-transform-produce, exactly once: a read_committed consumer in a group and a
  transactional producer turn every input record into one output record and commit the
  consumer's offsets in the same transaction, while the test SIGKILLs and restarts, in turn, a
  leader of the output topic, the transaction coordinator's broker and the group coordinator's
  broker (and some transactions are aborted on purpose). Afterwards a read_committed reader of
  the output sees each input record's result once, none from an aborted transaction, in input
  order per partition; the group's committed offsets are the input's end offsets; the replicas
  of the output and of ``__transaction_state`` hold the same bytes below the high watermark and
  the replicas of the output and of ``__consumer_offsets`` the same ``.txnindex`` entries.
* A zombie: a producer whose transactional id a second producer took over mid-transaction is
  fenced; nothing it writes after the fence reaches the log, what it wrote before is aborted.
* Coordinator failover mid-commit: EndTxn(commit) is answered while a partition's leader is
  frozen (SIGSTOP) so its marker cannot be written; the coordinator is SIGKILLed in that
  window; the next coordinator loads PrepareCommit and writes the markers.
* Transaction timeout: a transaction left open past transaction.timeout.ms is aborted by the
  coordinator, read_committed readers move past it, its producer is fenced when it comes back.

Each test has a cluster of its own with short timeouts (FAST).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence

import confluent_kafka
import pytest
from confluent_kafka import KafkaException, TopicPartition

from minikafka.broker.group.coordinator import partition_for
from minikafka.broker.storage.txn_index import AbortedTxn, TransactionIndex
from minikafka.client.admin import AdminClient, NewTopic, raise_first
from minikafka.proto.common import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

# Both internal topics have 3 partitions in the harness's broker config.
INTERNAL_PARTITIONS = 3
FAST = {
    "zookeeper.session.timeout.ms": "4000",
    "min.insync.replicas": "2",
    "transaction.state.log.min.isr": "2",
    "log.flush.offset.checkpoint.interval.ms": "1000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}


# --- the cluster --------------------------------------------------------------------------------


def create_topics(cluster: Cluster, *topics: str, partitions: int) -> None:
    """RF3, min.insync.replicas=2; returns once every ISR is full."""
    with cluster.admin() as admin:
        raise_first(
            admin.create_topics(
                [NewTopic(t, partitions, 3, {}, {"min.insync.replicas": "2"}) for t in topics]
            )
        )
    cluster.wait_for(lambda: full_isrs(cluster, {t: partitions for t in topics}), 30, "ISRs")


def full_isrs(cluster: Cluster, topics: dict[str, int]) -> bool:
    return all(
        (state := cluster.partition_state(t, p)) is not None
        and state.leader >= 0
        and set(state.isr) == set(cluster.brokers)
        for t, n in topics.items()
        for p in range(n)
    )


def led_by_others(cluster: Cluster, topics: dict[str, int], broker_id: int) -> bool:
    """Whether every partition has a leader and it is not ``broker_id`` (the controller has
    handled its death)."""
    return all(
        (state := cluster.partition_state(t, p)) is not None
        and state.leader >= 0
        and state.leader != broker_id
        for t, n in topics.items()
        for p in range(n)
    )


def transaction_coordinator(cluster: Cluster, transactional_id: str) -> int:
    """The leader of the id's ``__transaction_state`` partition (FindCoordinator's answer)."""
    return cluster.leader(
        TRANSACTION_STATE_TOPIC, partition_for(transactional_id, INTERNAL_PARTITIONS)
    )


def group_coordinator(cluster: Cluster, group_id: str) -> int:
    return cluster.leader(GROUP_METADATA_TOPIC, partition_for(group_id, INTERNAL_PARTITIONS))


def admin_avoiding(cluster: Cluster, broker_id: int) -> AdminClient:
    """An admin client that bootstraps from every broker but a frozen one."""
    return AdminClient(
        [b.address for i, b in sorted(cluster.brokers.items()) if i != broker_id],
        request_timeout_ms=10_000,
    )


def log_sizes(cluster: Cluster) -> dict[int, int]:
    """How many log events each broker has written so far (for ``brokers_logging``)."""
    return {i: len(b.log_events()) for i, b in cluster.brokers.items()}


def brokers_logging(
    cluster: Cluster, since: dict[int, int], event: str, **fields: object
) -> list[int]:
    """The brokers that logged ``event`` with those fields after ``since``."""
    return [
        broker_id
        for broker_id, broker in sorted(cluster.brokers.items())
        if any(
            e.get("event") == event and all(e.get(k) == v for k, v in fields.items())
            for e in broker.log_events()[since[broker_id] :]
        )
    ]


# --- replicas -----------------------------------------------------------------------------------


def leader_high_watermark(cluster: Cluster, topic: str, partition: int) -> int:
    def answer() -> int | None:
        data = cluster.fetch(cluster.leader(topic, partition), topic, partition, 0)
        return data.high_watermark if data.error_code == ErrorCode.NONE else None

    return cluster.wait_for(answer, 30, f"the high watermark of {topic}-{partition}")


def txn_index_entries(
    cluster: Cluster, broker_id: int, topic: str, partition: int, below: int
) -> list[AbortedTxn]:
    """The replica's ``.txnindex`` entries of transactions aborted below ``below``, in segment
    order."""
    directory = cluster.brokers[broker_id].log_dir / f"{topic}-{partition}"
    entries: list[AbortedTxn] = []
    for path in sorted(directory.glob("*.txnindex"), key=lambda p: int(p.stem)):
        entries += [e for e in TransactionIndex.read_entries(path) if e.last_offset < below]
    return entries


def assert_replicas_agree(
    cluster: Cluster, topic: str, partitions: int, *, same_bytes: bool = True
) -> list[AbortedTxn]:
    """Every replica of each partition reaches the leader's high watermark, holds the same
    batches below it (``same_bytes``: not for a compacted topic whose cleaner runs on each
    replica by itself) and the same ``.txnindex`` entries below it; those entries."""
    everything: list[AbortedTxn] = []
    for partition in range(partitions):
        hw = leader_high_watermark(cluster, topic, partition)
        cluster.wait_for(
            lambda p=partition, hw=hw: all(  # type: ignore[misc]
                cluster.replica_state(b, topic, p).log_end_offset >= hw for b in cluster.brokers
            ),
            30,
            f"the replicas of {topic}-{partition} to reach {hw}",
        )
        if same_bytes:
            images = {
                b: cluster.replica_state(b, topic, partition).bytes_below(hw)
                for b in cluster.brokers
            }
            assert len(set(images.values())) == 1, (
                f"{topic}-{partition}: replicas differ below HW {hw}: "
                f"{ {b: len(i) for b, i in images.items()} } bytes"
            )
        indexes = {b: txn_index_entries(cluster, b, topic, partition, hw) for b in cluster.brokers}
        first = indexes[min(indexes)]
        assert all(i == first for i in indexes.values()), (
            f"{topic}-{partition}: .txnindex differs below HW {hw}: {indexes}"
        )
        everything += first
    return everything


# --- clients ------------------------------------------------------------------------------------


def transactional_producer(
    cluster: Cluster, transactional_id: str, **config: object
) -> confluent_kafka.Producer:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60_000,
            "linger.ms": 5,
            **config,
        }
    )
    producer.init_transactions(60)
    return producer


def read_partitions(
    cluster: Cluster, topic: str, partitions: int, isolation: str, timeout_s: float = 60
) -> dict[int, list[confluent_kafka.Message]]:
    """Every message ``isolation`` lets a reader see in each partition, from the start to the
    end (the LSO for read_committed). For read_committed, first waits until no transaction is
    open (the LSO has reached the high watermark)."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation,
        }
    )
    try:
        if isolation == "read_committed":
            plain = confluent_kafka.Consumer(
                {
                    "bootstrap.servers": cluster.kafka_bootstrap_servers,
                    "group.id": "plain",
                    "isolation.level": "read_uncommitted",  # librdkafka's default: committed
                }
            )
            try:

                def settled() -> bool:
                    return all(
                        consumer.get_watermark_offsets(tp, 10, cached=False)[1]
                        == plain.get_watermark_offsets(tp, 10, cached=False)[1]
                        for tp in (TopicPartition(topic, p) for p in range(partitions))
                    )

                cluster.wait_for(settled, timeout_s, f"no open transaction on {topic}")
            finally:
                plain.close()
        consumer.assign(
            [TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(partitions)]
        )
        seen: dict[int, list[confluent_kafka.Message]] = {p: [] for p in range(partitions)}
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"{topic}: only {sorted(at_end)} read to the end"
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    at_end.add(message.partition() or 0)
                continue
            seen[message.partition() or 0].append(message)
        return seen
    finally:
        consumer.close()


def attempt_of(message: confluent_kafka.Message) -> int:
    """The processor's transaction attempt that wrote an output record (its header)."""
    attempt = dict(message.headers() or [])["attempt"]
    assert isinstance(attempt, bytes)
    return int(attempt)


def values(messages: Iterable[confluent_kafka.Message]) -> list[bytes]:
    return [m.value() or b"" for m in messages]


def end_offsets(cluster: Cluster, topic: str, partitions: int) -> dict[int, int]:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": "end-offsets",
            "isolation.level": "read_uncommitted",
        }
    )
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), 10, cached=False)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def committed_offsets(
    cluster: Cluster, group_id: str, topic: str, partitions: int
) -> dict[int, int]:
    """The group's committed offsets (OffsetFetch, require_stable as read_committed asks)."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": group_id,
            "isolation.level": "read_committed",
        }
    )
    try:
        answer = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 30)
        return {tp.partition: tp.offset for tp in answer}
    finally:
        consumer.close()


# --- 1. consume-transform-produce under kills ---------------------------------------------------

IN, OUT, PARTITIONS = "orders", "invoices", 3


class Feeder(threading.Thread):
    """An idempotent acks=all producer of the input: ``<partition>:<sequence>`` to each
    partition in turn, about ``rate`` records a second, until ``stop``."""

    def __init__(self, cluster: Cluster, rate: float = 60) -> None:
        super().__init__(name="feeder", daemon=True)
        self.producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": cluster.kafka_bootstrap_servers,
                "enable.idempotence": True,
                "linger.ms": 5,
            }
        )
        self.interval_s = 1 / rate
        self.sent = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            partition = self.sent % PARTITIONS
            value = f"{partition}:{self.sent // PARTITIONS:06d}".encode()
            self.producer.produce(IN, value=value, key=b"k%d" % partition, partition=partition)
            self.sent += 1
            self.producer.poll(0)
            time.sleep(self.interval_s)

    def stop(self) -> None:
        self.stopping.set()
        self.join(10)
        assert self.producer.flush(120) == 0, "input records left unsent"


class _Stopped(Exception):
    """The test stopped the processor while it waited for a producer."""


class Processor(threading.Thread):
    """The exactly-once loop: consume up to ``commit_every`` input records, write
    ``out:<value>`` for each to the same partition of the output (keyed as the input; the
    header ``attempt`` names the transaction), send the offsets, commit. Every
    ``abort_every``-th transaction is aborted on purpose. On an abortable error: abort and
    rewind to the committed offsets; on a fatal one: a new producer with the same transactional
    id, and rewind; after a rebalance: rewind."""

    def __init__(
        self,
        cluster: Cluster,
        transactional_id: str,
        group_id: str,
        commit_every: int = 20,
        abort_every: int = 7,
    ) -> None:
        super().__init__(name="processor", daemon=True)
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.commit_every = commit_every
        self.abort_every = abort_every
        self.consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": cluster.kafka_bootstrap_servers,
                "group.id": group_id,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "session.timeout.ms": 30_000,
            }
        )
        self.producer: confluent_kafka.Producer | None = None
        self.stopping = threading.Event()
        self.failure: BaseException | None = None
        self.attempts = 0
        self.commits = 0
        self.committed: dict[int, int] = {}  # what the last commit sent
        self.aborted_attempts: set[int] = set()  # aborted for sure (abort_transaction returned)
        self.deliberate_aborts = 0
        self.abortable_errors: list[str] = []
        self.fatal_errors: list[str] = []
        self.rebalances = 0
        self._rebalanced = False
        # A kill aimed at a step: the loop stops at ``hold_at`` ("produced": the records are
        # handed to the producer; "sending offsets"; "committing"), sets ``held`` and goes on
        # once ``release`` is set.
        self.hold_at: str | None = None
        self.held = threading.Event()
        self.release = threading.Event()

    # --- the thread ---

    def run(self) -> None:
        try:
            self.producer = self._new_producer()
            self.consumer.subscribe(
                [IN], on_assign=self._on_rebalance, on_revoke=self._on_rebalance
            )
            while not self.stopping.is_set():
                messages = [
                    m for m in self.consumer.consume(self.commit_every, 0.5) if not m.error()
                ]
                if self._rebalanced:
                    # Positions now come from the committed offsets; what this call returned
                    # may predate that. Start again from the committed offsets.
                    self._rebalanced = False
                    self.rebalances += 1
                    self._rewind()
                    continue
                if messages:
                    self._transaction(messages)
        except _Stopped:
            pass
        except BaseException as exc:  # reported to the test's thread by stop()
            self.failure = exc
        finally:
            self.consumer.close()
            if self.producer is not None:
                self.producer.flush(10)

    def stop(self) -> None:
        self.stopping.set()
        self.release.set()
        self.join(90)
        assert not self.is_alive(), "the processor did not stop"
        if self.failure is not None:
            raise AssertionError(f"the processor failed: {self.failure!r}") from self.failure

    def _step(self, step: str) -> None:
        if self.hold_at == step:
            self.hold_at = None
            self.held.set()
            self.release.wait(60)
            self.release.clear()

    def hold(self, step: str, timeout_s: float = 30) -> None:
        """Until the loop is at ``step``, where it waits for ``go_on``."""
        self.held.clear()
        self.hold_at = step
        if not self.held.wait(timeout_s):
            raise AssertionError(f"the processor did not reach {step!r} ({self.failure!r})")

    def go_on(self) -> None:
        self.release.set()

    def _on_rebalance(self, consumer: object, partitions: list[TopicPartition]) -> None:
        self._rebalanced = True

    # --- one transaction ---

    def _transaction(self, messages: Sequence[confluent_kafka.Message]) -> None:
        assert self.producer is not None
        producer = self.producer
        self.attempts += 1
        attempt = self.attempts
        offsets: dict[int, int] = {}
        for m in messages:
            offsets[m.partition() or 0] = (m.offset() or 0) + 1
        try:
            producer.begin_transaction()
            for m in messages:
                self._produce(m, attempt)
            self._step("produced")
            self._step("sending offsets")
            self._retrying(
                lambda timeout: producer.send_offsets_to_transaction(
                    [TopicPartition(IN, p, o) for p, o in sorted(offsets.items())],
                    self.consumer.consumer_group_metadata(),
                    timeout,
                )
            )
            if attempt % self.abort_every == 0:
                self.deliberate_aborts += 1
                self._abort(attempt)
                return
            self._step("committing")
            self._retrying(producer.commit_transaction)
        except KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                self.abortable_errors.append(str(error))
                self._abort(attempt)
            else:
                self._replace_producer(error)
            return
        self.commits += 1
        self.committed.update(offsets)

    def _produce(self, message: confluent_kafka.Message, attempt: int) -> None:
        assert self.producer is not None
        while True:
            try:
                self.producer.produce(
                    OUT,
                    value=b"out:" + (message.value() or b""),
                    key=message.key(),
                    partition=message.partition() or 0,
                    headers=[("attempt", str(attempt).encode())],
                )
                return
            except BufferError:
                self.producer.poll(0.1)

    @staticmethod
    def _retrying(call: Callable[[float], object], timeout_s: float = 15, tries: int = 3) -> None:
        """librdkafka's rule: a retriable error (a timeout among them) of a transactional call
        means call it again. After ``tries`` the last error is raised: the caller gives the
        producer up."""
        for attempt in range(tries):
            try:
                call(timeout_s)
                return
            except KafkaException as exc:
                if not exc.args[0].retriable() or attempt == tries - 1:
                    raise

    def _abort(self, attempt: int) -> None:
        assert self.producer is not None
        try:
            self._retrying(self.producer.abort_transaction)
        except KafkaException as exc:
            self._replace_producer(exc.args[0])  # its InitProducerId aborts the transaction
        else:
            self.aborted_attempts.add(attempt)
            self._rewind()

    def _replace_producer(self, error: confluent_kafka.KafkaError) -> None:
        """A fatal error (or a call that never finishes): a new producer with the same
        transactional id fences this one and aborts what it left open; the consumer rewinds."""
        self.fatal_errors.append(str(error))
        self.producer = self._new_producer()
        self._rewind()

    def _new_producer(self) -> confluent_kafka.Producer:
        while not self.stopping.is_set():
            producer = confluent_kafka.Producer(
                {
                    "bootstrap.servers": self.cluster.kafka_bootstrap_servers,
                    "transactional.id": self.transactional_id,
                    "transaction.timeout.ms": 60_000,
                    "linger.ms": 5,
                    # librdkafka 2.16 (issues 5511, 5456): a TxnOffsetCommit to a group
                    # coordinator it learnt before that broker died and left the metadata
                    # waits, its timeout unheeded, until some broker connection of the client
                    # changes state. Idle connections closing are such changes.
                    "connections.max.idle.ms": 5_000,
                }
            )
            try:
                self._retrying(producer.init_transactions, tries=8)
                return producer
            except KafkaException as exc:
                self.fatal_errors.append(f"init_transactions: {exc.args[0]}")
        raise _Stopped()

    def _rewind(self) -> None:
        """Every assigned partition back to the group's committed offset."""
        while not self.stopping.is_set():
            try:
                assignment = self.consumer.assignment()
                committed = self.consumer.committed(assignment, 30) if assignment else []
                for tp in committed:
                    offset = tp.offset if tp.offset >= 0 else confluent_kafka.OFFSET_BEGINNING
                    self.consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
                return
            except KafkaException:
                time.sleep(0.2)


def test_consume_transform_produce_is_exactly_once_through_kills(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST)
    create_topics(cluster, IN, OUT, partitions=PARTITIONS)
    transactional_id, group_id = "invoicer", "invoicing"
    topics = {
        IN: PARTITIONS,
        OUT: PARTITIONS,
        TRANSACTION_STATE_TOPIC: INTERNAL_PARTITIONS,
        GROUP_METADATA_TOPIC: INTERNAL_PARTITIONS,
    }
    feeder = Feeder(cluster)
    processor = Processor(cluster, transactional_id, group_id)
    feeder.start()
    processor.start()
    kills: list[tuple[str, int]] = []
    while_down: list[int] = []  # commits while each victim was down
    try:
        cluster.wait_for(lambda: processor.commits >= 5 or processor.failure, 60, "commits")
        cluster.wait_for(lambda: full_isrs(cluster, topics), 30, "full ISRs before the kills")
        # Each kill aimed at a step: the output's leader with records handed to the producer,
        # the transaction coordinator a moment into commit_transaction (EndTxn, PrepareCommit,
        # markers), the group coordinator as the offsets are to be sent (TxnOffsetCommit).
        kill_plan: list[tuple[str, str, float, Callable[[], int]]] = [
            ("a leader of the output", "produced", 0.0, lambda: cluster.leader(OUT, 0)),
            (
                "the transaction coordinator",
                "committing",
                0.01,
                lambda: transaction_coordinator(cluster, transactional_id),
            ),
            (
                "the group coordinator",
                "sending offsets",
                0.0,
                lambda: group_coordinator(cluster, group_id),
            ),
        ]
        for role, step, delay_s, victim_of in kill_plan:
            processor.hold(step)
            victim = victim_of()
            kills.append((role, victim))
            if delay_s:
                processor.go_on()
                time.sleep(delay_s)
                cluster.kill(victim)
            else:
                cluster.kill(victim)
                processor.go_on()
            cluster.wait_for(
                lambda v=victim: led_by_others(cluster, topics, v),  # type: ignore[misc]
                30,
                f"leaders after {victim}",
            )
            # Commits while the victim is down: counted, not required (the client may wait
            # for an idle connection to close first, see Processor._new_producer).
            before = processor.commits
            deadline = time.monotonic() + 15
            while processor.commits < before + 3 and time.monotonic() < deadline:
                time.sleep(0.1)
            while_down.append(processor.commits - before)
            cluster.start(victim, wait_for_expiry=False)
            cluster.wait_for(lambda: full_isrs(cluster, topics), 60, f"broker {victim} back")
            before = processor.commits
            cluster.wait_for(
                lambda b=before: processor.commits >= b + 3 or processor.failure,  # type: ignore[misc]
                60,
                f"commits after {role} (broker {victim}) came back",
            )
            assert processor.failure is None
        feeder.stop()
        ends = end_offsets(cluster, IN, PARTITIONS)
        cluster.wait_for(
            lambda: (
                processor.failure or committed_offsets(cluster, group_id, IN, PARTITIONS) == ends
            ),
            120,
            "the group's offsets to reach the input's end",
            interval_s=1,
        )
    except BaseException:
        feeder.stopping.set()
        processor.stopping.set()
        processor.release.set()
        raise
    processor.stop()
    print(
        f"kills {kills} ({while_down} commits while down); {feeder.sent} input records, "
        f"{processor.attempts} transactions: "
        f"{processor.commits} committed, {processor.deliberate_aborts} aborted on purpose, "
        f"abortable errors {processor.abortable_errors}, fatal {processor.fatal_errors}, "
        f"{processor.rebalances} rebalances"
    )

    # The group's offsets are the input's end, as the broker answers them.
    assert committed_offsets(cluster, group_id, IN, PARTITIONS) == ends

    inputs = read_partitions(cluster, IN, PARTITIONS, "read_uncommitted")
    outputs = read_partitions(cluster, OUT, PARTITIONS, "read_committed")
    everything = read_partitions(cluster, OUT, PARTITIONS, "read_uncommitted")
    for p in range(PARTITIONS):
        expected = [b"out:" + v for v in values(inputs[p])]
        got = values(outputs[p])
        assert len(expected) == ends[p]
        if got != expected:
            missing = sorted(set(expected) - set(got))
            twice = sorted({v for v in got if got.count(v) > 1})
            raise AssertionError(
                f"{OUT}-{p}: {len(got)} records for {len(expected)} inputs; "
                f"missing {missing[:10]}, twice {twice[:10]}, in order: {got == sorted(got)}"
            )
        leaked = {attempt_of(m) for m in outputs[p]} & processor.aborted_attempts
        assert not leaked, f"{OUT}-{p}: records of aborted transactions {sorted(leaked)}"
    assert processor.deliberate_aborts >= 2
    assert sum(map(len, everything.values())) > sum(map(len, outputs.values()))

    cluster.wait_for(lambda: full_isrs(cluster, topics), 60, "full ISRs at the end")
    aborted = assert_replicas_agree(cluster, OUT, PARTITIONS)
    assert len(aborted) >= processor.deliberate_aborts  # one entry per partition written
    assert_replicas_agree(cluster, TRANSACTION_STATE_TOPIC, INTERNAL_PARTITIONS)
    assert_replicas_agree(cluster, GROUP_METADATA_TOPIC, INTERNAL_PARTITIONS, same_bytes=False)


# --- 2. a zombie ---------------------------------------------------------------------------------


def test_a_zombie_producer_is_fenced(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST)
    create_topics(cluster, "ledger", partitions=2)
    zombie = transactional_producer(cluster, "ledger-writer")
    zombie.begin_transaction()
    zombie.produce("ledger", value=b"zombie-before", partition=0)
    assert zombie.flush(30) == 0
    # The zombie's successor: its InitProducerId bumps the epoch, and aborts the open
    # transaction under the new epoch (the ABORT marker fences the old one at the partition).
    successor = transactional_producer(cluster, "ledger-writer")
    successor.begin_transaction()
    successor.produce("ledger", value=b"successor", partition=0)
    successor.commit_transaction(30)

    # The zombie carries on: its produce (old epoch) to the partition its transaction had is
    # refused by the leader, and so is any later step.
    with pytest.raises(KafkaException) as raised:
        for value, partition in ((b"zombie-after", 0), (b"zombie-elsewhere", 1)):
            zombie.produce("ledger", value=value, partition=partition)
        zombie.flush(30)
        zombie.commit_transaction(30)
    error = raised.value.args[0]
    assert error.fatal() or error.txn_requires_abort(), str(error)
    if not error.fatal():  # the abort the zombie then tries is refused too: it is fenced
        with pytest.raises(KafkaException) as again:
            zombie.abort_transaction(30)
        assert again.value.args[0].fatal(), str(again.value.args[0])

    # The successor goes on.
    successor.begin_transaction()
    successor.produce("ledger", value=b"successor-2", partition=1)
    successor.commit_transaction(30)

    committed = read_partitions(cluster, "ledger", 2, "read_committed")
    assert values(committed[0]) == [b"successor"]
    assert values(committed[1]) == [b"successor-2"]
    # Nothing the zombie sent after the fence reached the log; what it wrote before is there,
    # aborted.
    logged = read_partitions(cluster, "ledger", 2, "read_uncommitted")
    assert values(logged[0]) == [b"zombie-before", b"successor"]
    assert values(logged[1]) == [b"successor-2"]
    assert_replicas_agree(cluster, "ledger", 2)


# --- 3. coordinator failover mid-commit --------------------------------------------------------


def test_the_next_coordinator_completes_a_commit_whose_markers_were_not_written(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST)
    topic = "transfers"
    create_topics(cluster, topic, partitions=2)
    transactional_id = "transfer-writer"
    producer = transactional_producer(cluster, transactional_id)
    coordinator = transaction_coordinator(cluster, transactional_id)
    # A partition led by another broker: that leader is frozen so its marker cannot be written.
    frozen_partition = next(p for p in range(2) if cluster.leader(topic, p) != coordinator)
    frozen = cluster.leader(topic, frozen_partition)

    producer.begin_transaction()
    for p in range(2):
        producer.produce(topic, value=b"first-%d" % p, partition=p)
    assert producer.flush(30) == 0
    cluster.pause(frozen)
    try:
        producer.commit_transaction(60)  # answered once PrepareCommit is in the log
        with admin_avoiding(cluster, frozen) as admin:
            state = admin.describe_transactions([transactional_id])[transactional_id].state
        assert state == "PrepareCommit", state  # a marker is still to be written
        before_kill = log_sizes(cluster)
        cluster.kill(coordinator)
    finally:
        cluster.resume(frozen)

    topics = {topic: 2, TRANSACTION_STATE_TOPIC: INTERNAL_PARTITIONS}
    cluster.wait_for(lambda: led_by_others(cluster, topics, coordinator), 30, "new leaders")
    successor = cluster.wait_for(
        lambda: brokers_logging(
            cluster,
            before_kill,
            "transaction.completing_after_load",
            transactional_id=transactional_id,
            state="PrepareCommit",
        ),
        30,
        "a coordinator completing the loaded PrepareCommit",
    )
    assert coordinator not in successor
    committed = read_partitions(cluster, topic, 2, "read_committed")
    assert [values(committed[p]) for p in range(2)] == [[b"first-0"], [b"first-1"]]

    # The producer goes on with the new coordinator.
    producer.begin_transaction()
    for p in range(2):
        producer.produce(topic, value=b"second-%d" % p, partition=p)
    producer.commit_transaction(60)
    cluster.start(coordinator, wait_for_expiry=False)
    cluster.wait_for(lambda: full_isrs(cluster, topics), 60, f"broker {coordinator} back")
    committed = read_partitions(cluster, topic, 2, "read_committed")
    assert [values(committed[p]) for p in range(2)] == [
        [b"first-0", b"second-0"],
        [b"first-1", b"second-1"],
    ]
    assert_replicas_agree(cluster, topic, 2)
    assert_replicas_agree(cluster, TRANSACTION_STATE_TOPIC, INTERNAL_PARTITIONS)


# --- 4. transaction timeout --------------------------------------------------------------------


def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=3, overrides=FAST)
    topic = "sessions"
    create_topics(cluster, topic, partitions=1)
    silent = transactional_producer(
        cluster, "silent", **{"transaction.timeout.ms": 3000, "socket.timeout.ms": 3000}
    )
    silent.begin_transaction()
    silent.produce(topic, value=b"stale", partition=0)
    assert silent.flush(30) == 0
    opened = time.monotonic()

    other = transactional_producer(cluster, "lively")
    other.begin_transaction()
    other.produce(topic, value=b"fresh", partition=0)
    other.commit_transaction(30)

    # read_committed is held at the silent transaction until the coordinator aborts it.
    committed = read_partitions(cluster, topic, 1, "read_committed", timeout_s=30)
    assert values(committed[0]) == [b"fresh"]
    assert time.monotonic() - opened >= 2.5, "the LSO did not wait for the open transaction"
    with cluster.admin() as admin:
        described = admin.describe_transactions(["silent"])["silent"]
    assert described.state == "CompleteAbort", described

    # The silent producer comes back: fenced (its produce already, by the ABORT marker's
    # epoch; else its commit).
    with pytest.raises(KafkaException) as raised:
        silent.produce(topic, value=b"late", partition=0)
        silent.flush(10)
        silent.commit_transaction(30)
    error = raised.value.args[0]
    assert error.fatal() or error.txn_requires_abort(), str(error)
    logged = read_partitions(cluster, topic, 1, "read_uncommitted")
    assert values(logged[0]) == [b"stale", b"fresh"]
    assert_replicas_agree(cluster, topic, 1)
