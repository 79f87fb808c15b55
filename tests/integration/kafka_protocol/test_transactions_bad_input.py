"""Bad transactional input on the Kafka listener gets Kafka 3.9's error and changes nothing
(issue 33): an unknown transactional id, another producer id, a stale epoch, EndTxn without a
transaction, a transaction timeout above transaction.max.timeout.ms, transactional records
without their transactional id, a fenced producer's records, a commit after the coordinator
aborted a timed-out transaction, requests to a broker that is not the coordinator and
WriteTxnMarkers without ClusterAction.

Raw requests (kio-encoded, tests/integration/kafka_protocol/raw.py) against real brokers, so
that exactly one field is wrong. After each refusal the test compares what a client could
see before and after: the transaction (DescribeTransactions), the partition's log end offset
(from the leader's files), high watermark and last stable offset, and what a read_committed
Fetch returns.

The errors are Kafka's TransactionCoordinator's (INVALID_PRODUCER_ID_MAPPING for an unknown id
or another producer id, PRODUCER_FENCED for another epoch, INVALID_TXN_STATE for EndTxn in
Empty or against a completed outcome, INVALID_TRANSACTION_TIMEOUT, NOT_COORDINATOR) and
KafkaApis' (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for transactional records without an id,
INVALID_PRODUCER_EPOCH instead of PRODUCER_FENCED to versions before KIP-588's,
CLUSTER_AUTHORIZATION_FAILED for WriteTxnMarkers); a fenced producer's records are the
partition's ProducerStateManager's INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

import datetime
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from minikafka.broker.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from minikafka.client.admin import NewTopic
from minikafka.proto.errors import ErrorCode
from minikafka.zk.acl_store import AclZkStore
from tests.integration.cluster import Cluster
from tests.integration.conftest import ClusterFactory, fresh_chroot
from tests.integration.kafka_protocol.raw import (
    RawKafka,
    fetch_fields,
    produce_fields,
    read_frame,
)
from tests.integration.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.integration

PRODUCE, FETCH, FIND_COORDINATOR, INIT_PRODUCER_ID = 0, 1, 10, 22
ADD_PARTITIONS, ADD_OFFSETS, END_TXN, WRITE_TXN_MARKERS, TXN_OFFSET_COMMIT = 24, 25, 26, 27, 28
DESCRIBE_TRANSACTIONS = 65
GROUP_KEY, TRANSACTION_KEY = 0, 1
TOPIC = "ledger"
MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms, Kafka's default
# The coordinator looks for timed-out transactions this often (Kafka's default is 10 s).
ABORT_INTERVAL_MS = 500
E = ErrorCode


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    cluster = Cluster(
        fresh_chroot(zookeeper_server),
        tmp_path_factory.mktemp("txn-bad-input"),
        n_brokers=3,
        overrides={
            "min.insync.replicas": "2",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(ABORT_INTERVAL_MS),
        },
    )
    try:
        cluster.start_all()
        cluster.wait_until_serving()
        _create(cluster, TOPIC, 3)
        yield cluster
    finally:
        cluster.close()


def _create(cluster: Cluster, topic: str, replication_factor: int) -> None:
    with cluster.admin() as admin:
        admin.create_topics([NewTopic(topic, 1, replication_factor)])
    cluster.wait_for(
        lambda: (
            cluster.leader(topic, 0) >= 0
            and cluster.fetch(cluster.leader(topic, 0), topic, 0, 0).error_code == E.NONE
        ),
        30,
        f"a leader serving {topic}-0",
    )


# --- requests -----------------------------------------------------------------------------------


def _retry(call: Callable[[], Any], code_of: Callable[[Any], int], what: str) -> Any:
    """``call()`` until its answer is not a retriable coordinator error (the coordinator's
    partition of __transaction_state or __consumer_offsets may still be loading)."""
    retriable = {
        E.UNSTABLE_OFFSET_COMMIT,
        E.COORDINATOR_NOT_AVAILABLE,
        E.COORDINATOR_LOAD_IN_PROGRESS,
        E.CONCURRENT_TRANSACTIONS,
    }
    deadline = time.monotonic() + 30
    while True:
        answer = call()
        if code_of(answer) not in retriable or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def _coordinator(cluster: Cluster, key: str, key_type: int = TRANSACTION_KEY) -> int:
    """The broker id of ``key``'s transaction (or group) coordinator."""
    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        answer = _retry(
            lambda: raw.call(FIND_COORDINATOR, 3, {"key": key, "key_type": key_type}),
            lambda a: a.error_code,
            f"the coordinator of {key}",
        )
    assert answer.error_code == E.NONE, answer.error_message
    return int(answer.node_id)


def _connect(cluster: Cluster, broker_id: int) -> RawKafka:
    return RawKafka(cluster.brokers[broker_id].kafka_address)


def _init_producer_id(
    raw: RawKafka,
    transactional_id: str,
    timeout_ms: int = 60_000,
    producer: tuple[int, int] = (-1, -1),
    version: int = 4,
) -> tuple[int, int, int]:
    """(error, producer id, epoch) of InitProducerId (``producer``: KIP-360's, v3+)."""
    answer = _retry(
        lambda: raw.call(
            INIT_PRODUCER_ID,
            version,
            {
                "transactional_id": transactional_id,
                "transaction_timeout": datetime.timedelta(milliseconds=timeout_ms),
                "producer_id": producer[0],
                "producer_epoch": producer[1],
            },
        ),
        lambda a: a.error_code,
        f"InitProducerId of {transactional_id}",
    )
    return int(answer.error_code), int(answer.producer_id), int(answer.producer_epoch)


def _add_partitions(
    raw: RawKafka, transactional_id: str, producer: tuple[int, int], version: int = 3
) -> int:
    """AddPartitionsToTxn (v3 and below) of partition 0 of TOPIC: its error."""
    answer = raw.call(
        ADD_PARTITIONS,
        version,
        {
            "v3_and_below_transactional_id": transactional_id,
            "v3_and_below_producer_id": producer[0],
            "v3_and_below_producer_epoch": producer[1],
            "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}],
        },
    )
    (topic,) = answer.results_by_topic_v3_and_below
    (partition,) = topic.results_by_partition
    return int(partition.partition_error_code)


def _add_offsets(
    raw: RawKafka, transactional_id: str, producer: tuple[int, int], version: int = 3
) -> int:
    body = {
        "transactional_id": transactional_id,
        "producer_id": producer[0],
        "producer_epoch": producer[1],
        "group_id": "ledger-readers",
    }
    return int(raw.call(ADD_OFFSETS, version, body).error_code)


def _end_txn(
    raw: RawKafka,
    transactional_id: str,
    producer: tuple[int, int],
    committed: bool = True,
    version: int = 3,
) -> int:
    body = {
        "transactional_id": transactional_id,
        "producer_id": producer[0],
        "producer_epoch": producer[1],
        "committed": committed,
    }
    return int(raw.call(END_TXN, version, body).error_code)


def _txn_offset_commit(
    raw: RawKafka,
    transactional_id: str,
    group_id: str,
    producer: tuple[int, int],
    generation_id: int = -1,
    member_id: str = "",
) -> int:
    """TxnOffsetCommit v3 of offset 1 of TOPIC-0: its error."""
    body = {
        "transactional_id": transactional_id,
        "group_id": group_id,
        "producer_id": producer[0],
        "producer_epoch": producer[1],
        "generation_id": generation_id,
        "member_id": member_id,
        "group_instance_id": None,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 1,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }
    answer = raw.call(TXN_OFFSET_COMMIT, 3, body)
    return int(answer.topics[0].partitions[0].error_code)


def _committed_offset(cluster: Cluster, group_id: str) -> int:
    """The group's committed offset of TOPIC-0 (OffsetFetch v7, require_stable: pending
    transactional offsets are UNSTABLE_OFFSET_COMMIT, retried)."""
    body = {"group_id": group_id, "topics": [{"name": TOPIC, "partition_indexes": [0]}]}
    with _connect(cluster, _coordinator(cluster, group_id, GROUP_KEY)) as raw:
        answer = _retry(
            lambda: raw.call(9, 7, {**body, "require_stable": True}),
            lambda a: (
                a.topics[0].partitions[0].error_code if a.error_code == E.NONE else a.error_code
            ),
            f"the offsets of {group_id}",
        )
    assert answer.error_code == E.NONE
    (partition,) = answer.topics[0].partitions
    assert partition.error_code == E.NONE
    return int(partition.committed_offset)


def _transactional_batch(values: list[bytes], producer: tuple[int, int], sequence: int) -> bytes:
    """A transactional RecordBatch v2 of kafka-python's encoder."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=1,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=sequence,
        batch_size=1 << 20,
    )
    for offset, value in enumerate(values):
        builder.append(offset, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])
    return bytes(builder.build())


def _produce(cluster: Cluster, records: bytes, transactional_id: str | None, topic: str) -> int:
    """Produce v8, acks=all, to the leader of partition 0: its error."""
    with _connect(cluster, cluster.leader(topic, 0)) as raw:
        answer = raw.call(
            PRODUCE, 8, produce_fields(topic, records, transactional_id=transactional_id)
        )
    return int(answer.responses[0].partition_responses[0].error_code)


# --- what a client can see ----------------------------------------------------------------------


@dataclass(frozen=True)
class Transaction:
    """DescribeTransactions' view of one id."""

    error_code: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int
    partitions: tuple[tuple[str, int], ...]


def _describe(cluster: Cluster, transactional_id: str) -> Transaction:
    with _connect(cluster, _coordinator(cluster, transactional_id)) as raw:
        (state,) = _describe_transactions(raw, transactional_id)
    return state


def _describe_transactions(raw: RawKafka, transactional_id: str) -> list[Transaction]:
    """DescribeTransactions v0, decoded here: kio refuses the transaction_start_time of -1
    that Kafka (and this broker) answer for an id with no transaction (Empty).

    Response (flexible): header v1 (correlation_id int32, tags); throttle_time_ms int32;
    transaction_states compact array of {error_code int16, transactional_id compact string,
    transaction_state compact string, transaction_timeout_ms int32, transaction_start_time_ms
    int64, producer_id int64, producer_epoch int16, topics compact array of {topic compact
    string, partitions compact array of int32, tags}, tags}; tags.
    """
    correlation_id = raw.send(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [transactional_id]})
    data = read_frame(raw.socket)
    reader = _Reader(data)
    assert reader.unpack(">i") == correlation_id
    reader.tags()
    reader.unpack(">i")  # throttle_time_ms
    states = []
    for _ in range(reader.uvarint() - 1):
        error_code = reader.unpack(">h")
        txn_id, state = reader.string(), reader.string()
        assert txn_id == transactional_id
        timeout_ms, start_ms, producer_id, epoch = reader.unpack(">iqqh")
        partitions = []
        for _ in range(reader.uvarint() - 1):
            topic = reader.string()
            partitions += [(topic, reader.unpack(">i")) for _ in range(reader.uvarint() - 1)]
            reader.tags()
        reader.tags()
        states.append(
            Transaction(
                error_code,
                state,
                producer_id,
                epoch,
                timeout_ms,
                start_ms,
                tuple(sorted(partitions)),
            )
        )
    return states


class _Reader:
    """Kafka's primitive types, in order, from one response frame."""

    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0

    def unpack(self, fmt: str) -> Any:
        values = struct.unpack_from(fmt, self._data, self._at)
        self._at += struct.calcsize(fmt)
        return values[0] if len(values) == 1 else values

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self._data[self._at]
            self._at += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def string(self) -> str:
        size = self.uvarint() - 1
        text = self._data[self._at : self._at + size].decode()
        self._at += size
        return text

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._at += self.uvarint()


@dataclass(frozen=True)
class PartitionView:
    """The leader's log end offset (its files), high watermark, last stable offset and the
    values a read_committed consumer reads."""

    log_end_offset: int
    high_watermark: int
    last_stable_offset: int
    committed: tuple[bytes, ...]


def _partition(cluster: Cluster, topic: str = TOPIC) -> PartitionView:
    """Read committed from offset 0 up to the last stable offset (a fetch answers from one
    segment, so several)."""
    leader = cluster.leader(topic, 0)
    offset, committed = 0, []
    with _connect(cluster, leader) as raw:
        while True:
            body = {**fetch_fields(topic, offset, 1 << 20), "isolation_level": 1}
            (answer,) = raw.call(FETCH, 12, body).responses[0].partitions
            assert answer.error_code == E.NONE
            if offset >= answer.last_stable_offset:
                break
            values, offset = _read_committed(
                answer.records or b"", answer.aborted_transactions or (), offset
            )
            committed += values
    return PartitionView(
        cluster.replica_state(leader, topic, 0).log_end_offset,
        int(answer.high_watermark),
        int(answer.last_stable_offset),
        tuple(committed),
    )


def _read_committed(data: bytes, aborted: Any, offset: int) -> tuple[list[bytes], int]:
    """The values a read_committed consumer keeps from ``data`` and the offset after it
    (Kafka's Fetcher: a producer's batches from an aborted transaction's first offset up to
    its ABORT marker are dropped)."""
    starts = sorted((int(a.first_offset), int(a.producer_id)) for a in aborted)
    dropping: set[int] = set()
    values: list[bytes] = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        while starts and starts[0][0] <= batch.base_offset:
            dropping.add(starts.pop(0)[1])
        if batch.is_control_batch:
            dropping.discard(batch.producer_id)
        elif batch.producer_id not in dropping:
            values.extend(bytes(r.value or b"") for r in batch if r.offset >= offset)
        offset = batch.base_offset + batch.last_offset_delta + 1
    return values, offset


def _open_transaction(cluster: Cluster, transactional_id: str, value: bytes) -> tuple[int, int]:
    """An Ongoing transaction of ``transactional_id`` with one record in TOPIC-0, its id
    initialised twice so that the epoch before is a stale one: (producer id, epoch)."""
    with _connect(cluster, _coordinator(cluster, transactional_id)) as raw:
        assert _init_producer_id(raw, transactional_id)[0] == E.NONE
        error, producer_id, epoch = _init_producer_id(raw, transactional_id)
        assert error == E.NONE and epoch >= 1
        assert _add_partitions(raw, transactional_id, (producer_id, epoch)) == E.NONE
    batch = _transactional_batch([value], (producer_id, epoch), 0)
    assert _produce(cluster, batch, transactional_id, TOPIC) == E.NONE
    assert _describe(cluster, transactional_id).state == "Ongoing"
    return producer_id, epoch


def _wait_state(cluster: Cluster, transactional_id: str, state: str) -> Transaction:
    def reached() -> Transaction | None:
        described = _describe(cluster, transactional_id)
        return described if described.state == state else None

    return cluster.wait_for(reached, 30, f"{transactional_id} in {state}")


# --- the tests ----------------------------------------------------------------------------------


def test_an_unknown_transactional_id_is_an_invalid_producer_id_mapping(cluster: Cluster) -> None:
    unknown = f"never-initialised-{uuid.uuid4().hex[:6]}"
    before = _partition(cluster)
    with _connect(cluster, _coordinator(cluster, unknown)) as raw:
        for version in (0, 3):
            assert (
                _add_partitions(raw, unknown, (1000, 0), version) == E.INVALID_PRODUCER_ID_MAPPING
            )
            assert _add_offsets(raw, unknown, (1000, 0), version) == E.INVALID_PRODUCER_ID_MAPPING
            assert _end_txn(raw, unknown, (1000, 0), True, version) == (
                E.INVALID_PRODUCER_ID_MAPPING
            )
            assert _end_txn(raw, unknown, (1000, 0), False, version) == (
                E.INVALID_PRODUCER_ID_MAPPING
            )
    # Nothing was created for it, and no marker reached the partition.
    assert _describe(cluster, unknown).error_code == E.TRANSACTIONAL_ID_NOT_FOUND
    assert _partition(cluster) == before


@pytest.mark.xfail(
    strict=True,
    reason="Kafka 3.9 verifies a TxnOffsetCommit with the transaction coordinator "
    "(transaction.partition.verification.enable, KIP-890) and answers an unknown id "
    "INVALID_PRODUCER_ID_MAPPING; this broker does not verify and stores the offsets",
)
def test_txn_offset_commit_of_an_unknown_transactional_id_is_refused(cluster: Cluster) -> None:
    unknown = f"never-initialised-{uuid.uuid4().hex[:6]}"
    group = f"group-{uuid.uuid4().hex[:6]}"
    with _connect(cluster, _coordinator(cluster, group, GROUP_KEY)) as raw:
        code = _retry(
            lambda: _txn_offset_commit(raw, unknown, group, (999_999, 0)), int, "TxnOffsetCommit"
        )
    assert code == E.INVALID_PRODUCER_ID_MAPPING


def test_another_producer_id_or_epoch_is_refused_and_the_transaction_goes_on(
    cluster: Cluster,
) -> None:
    tid = "tx-wrong-producer"
    producer_id, epoch = _open_transaction(cluster, tid, b"kept")
    transaction, partition = _describe(cluster, tid), _partition(cluster)
    other, stale, ahead = (
        (producer_id + 1000, epoch),
        (producer_id, epoch - 1),
        (producer_id, epoch + 5),
    )
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        for version in (0, 1, 2, 3):
            # KIP-588: PRODUCER_FENCED from v2 of these APIs, INVALID_PRODUCER_EPOCH before.
            fenced = E.PRODUCER_FENCED if version >= 2 else E.INVALID_PRODUCER_EPOCH
            assert _add_partitions(raw, tid, other, version) == E.INVALID_PRODUCER_ID_MAPPING
            assert _add_offsets(raw, tid, other, version) == E.INVALID_PRODUCER_ID_MAPPING
            assert _end_txn(raw, tid, other, True, version) == E.INVALID_PRODUCER_ID_MAPPING
            assert _end_txn(raw, tid, other, False, version) == E.INVALID_PRODUCER_ID_MAPPING
            for wrong in (stale, ahead):
                assert _add_partitions(raw, tid, wrong, version) == fenced
                assert _add_offsets(raw, tid, wrong, version) == fenced
                assert _end_txn(raw, tid, wrong, True, version) == fenced
                assert _end_txn(raw, tid, wrong, False, version) == fenced
        assert _describe(cluster, tid) == transaction
        assert _partition(cluster) == partition
        assert b"kept" not in partition.committed  # still open
        # The transaction is intact: its own producer commits it.
        assert _end_txn(raw, tid, (producer_id, epoch), True) == E.NONE
    _wait_state(cluster, tid, "CompleteCommit")
    cluster.wait_for(lambda: b"kept" in _partition(cluster).committed, 30, "the commit")


def test_end_txn_without_a_transaction_is_an_invalid_txn_state(cluster: Cluster) -> None:
    tid = "tx-no-transaction"
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        error, producer_id, epoch = _init_producer_id(raw, tid)
        assert error == E.NONE
        producer = (producer_id, epoch)
        transaction, partition = _describe(cluster, tid), _partition(cluster)
        assert transaction.state == "Empty"
        for version in (0, 3):
            assert _end_txn(raw, tid, producer, True, version) == E.INVALID_TXN_STATE
            assert _end_txn(raw, tid, producer, False, version) == E.INVALID_TXN_STATE
        assert _describe(cluster, tid) == transaction
        assert _partition(cluster) == partition  # no marker written

    # After a commit: a retried commit is answered NONE, an abort INVALID_TXN_STATE.
    producer_id, epoch = _open_transaction(cluster, tid, b"committed once")
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        assert _end_txn(raw, tid, (producer_id, epoch), True) == E.NONE
        done = _wait_state(cluster, tid, "CompleteCommit")
        cluster.wait_for(lambda: b"committed once" in _partition(cluster).committed, 30, "commit")
        partition = _partition(cluster)
        assert _end_txn(raw, tid, (producer_id, epoch), False) == E.INVALID_TXN_STATE
        assert _end_txn(raw, tid, (producer_id, epoch), True) == E.NONE
    assert _describe(cluster, tid) == done
    assert _partition(cluster) == partition


def test_a_transaction_timeout_above_the_maximum_is_refused(cluster: Cluster) -> None:
    fresh = f"tx-timeout-{uuid.uuid4().hex[:6]}"
    with _connect(cluster, _coordinator(cluster, fresh)) as raw:
        for timeout_ms in (MAX_TIMEOUT_MS + 1, 0):
            assert _init_producer_id(raw, fresh, timeout_ms)[0] == E.INVALID_TRANSACTION_TIMEOUT
    assert _describe(cluster, fresh).error_code == E.TRANSACTIONAL_ID_NOT_FOUND

    known = "tx-timeout-known"
    with _connect(cluster, _coordinator(cluster, known)) as raw:
        assert _init_producer_id(raw, known, 60_000)[0] == E.NONE
        transaction = _describe(cluster, known)
        assert _init_producer_id(raw, known, MAX_TIMEOUT_MS + 1) == (
            E.INVALID_TRANSACTION_TIMEOUT,
            -1,
            -1,
        )
    assert _describe(cluster, known) == transaction  # no epoch bump, the old timeout


def test_transactional_records_need_their_transactional_id(cluster: Cluster) -> None:
    tid = "tx-anonymous-records"
    producer_id, epoch = _open_transaction(cluster, tid, b"in the transaction")
    transaction, partition = _describe(cluster, tid), _partition(cluster)
    batch = _transactional_batch([b"no id"], (producer_id, epoch), 1)
    assert _produce(cluster, batch, None, TOPIC) == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert _describe(cluster, tid) == transaction
    assert _partition(cluster) == partition
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        assert _end_txn(raw, tid, (producer_id, epoch), False) == E.NONE
    _wait_state(cluster, tid, "CompleteAbort")


def test_a_fenced_producers_records_and_requests_are_refused(cluster: Cluster) -> None:
    tid = "tx-zombie"
    zombie = _open_transaction(cluster, tid, b"zombie")
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        # A new instance: its InitProducerId aborts the zombie's transaction under a bumped
        # epoch (CONCURRENT_TRANSACTIONS until that is done) and then takes the next epoch.
        error, producer_id, epoch = _init_producer_id(raw, tid)
    assert (error, producer_id) == (E.NONE, zombie[0]) and epoch == zombie[1] + 2
    transaction = _describe(cluster, tid)
    assert (transaction.state, transaction.producer_epoch) == ("Empty", epoch)
    cluster.wait_for(
        lambda: _partition(cluster).last_stable_offset == _partition(cluster).high_watermark,
        30,
        "the ABORT marker",
    )
    partition = _partition(cluster)
    assert b"zombie" not in partition.committed

    batch = _transactional_batch([b"zombie again"], zombie, 1)
    assert _produce(cluster, batch, tid, TOPIC) == E.INVALID_PRODUCER_EPOCH
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        assert _add_partitions(raw, tid, zombie) == E.PRODUCER_FENCED
        assert _end_txn(raw, tid, zombie, True) == E.PRODUCER_FENCED
        assert _end_txn(raw, tid, zombie, True, version=1) == E.INVALID_PRODUCER_EPOCH
    assert _describe(cluster, tid) == transaction
    assert _partition(cluster) == partition


def test_a_commit_after_the_transaction_timed_out_is_fenced(cluster: Cluster) -> None:
    tid = "tx-too-slow"
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        error, producer_id, epoch = _init_producer_id(raw, tid, timeout_ms=1_000)
        assert error == E.NONE
        assert _add_partitions(raw, tid, (producer_id, epoch)) == E.NONE
    batch = _transactional_batch([b"late"], (producer_id, epoch), 0)
    assert _produce(cluster, batch, tid, TOPIC) == E.NONE
    # The coordinator aborts it under a bumped epoch once it is older than its timeout.
    transaction = _wait_state(cluster, tid, "CompleteAbort")
    assert transaction.producer_epoch == epoch + 1
    cluster.wait_for(
        lambda: _partition(cluster).last_stable_offset == _partition(cluster).high_watermark,
        30,
        "the ABORT marker",
    )
    partition = _partition(cluster)
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        assert _end_txn(raw, tid, (producer_id, epoch), True) == E.PRODUCER_FENCED
        assert _end_txn(raw, tid, (producer_id, epoch), True, version=1) == (
            E.INVALID_PRODUCER_EPOCH
        )
    assert _describe(cluster, tid) == transaction
    assert _partition(cluster) == partition
    assert b"late" not in partition.committed


def test_a_broker_that_is_not_the_coordinator_says_so(cluster: Cluster) -> None:
    tid = "tx-elsewhere"
    producer_id, epoch = _open_transaction(cluster, tid, b"elsewhere")
    producer = (producer_id, epoch)
    transaction, partition = _describe(cluster, tid), _partition(cluster)
    coordinator = _coordinator(cluster, tid)
    group = "elsewhere-readers"
    group_coordinator = _coordinator(cluster, group, GROUP_KEY)
    for broker_id in cluster.brokers:
        with _connect(cluster, broker_id) as raw:
            if broker_id != coordinator:
                assert _init_producer_id(raw, tid)[0] == E.NOT_COORDINATOR
                assert _add_partitions(raw, tid, producer) == E.NOT_COORDINATOR
                assert _add_offsets(raw, tid, producer) == E.NOT_COORDINATOR
                assert _end_txn(raw, tid, producer, True) == E.NOT_COORDINATOR
                (state,) = _describe_transactions(raw, tid)
                assert state.error_code == E.NOT_COORDINATOR
            if broker_id != group_coordinator:
                assert _txn_offset_commit(raw, tid, group, producer) == E.NOT_COORDINATOR
    assert _describe(cluster, tid) == transaction
    assert _partition(cluster) == partition
    with _connect(cluster, coordinator) as raw:
        assert _end_txn(raw, tid, producer, False) == E.NONE
    _wait_state(cluster, tid, "CompleteAbort")


def test_init_producer_id_with_another_producer_or_an_empty_id_is_refused(
    cluster: Cluster,
) -> None:
    tid = "tx-recovering"
    producer_id, epoch = _open_transaction(cluster, tid, b"recovering")
    transaction, partition = _describe(cluster, tid), _partition(cluster)
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        # KIP-360: a producer id in the request must be the id's current one.
        other = (producer_id + 1000, epoch)
        assert _init_producer_id(raw, tid, producer=other)[0] == E.PRODUCER_FENCED
        # InitProducerId v3 predates PRODUCER_FENCED (KIP-588, v4).
        code = _init_producer_id(raw, tid, producer=other, version=3)[0]
        assert code == E.INVALID_PRODUCER_EPOCH
        # Both or neither (KafkaApis), an empty transactional id: INVALID_REQUEST.
        assert _init_producer_id(raw, tid, producer=(producer_id, -1))[0] == E.INVALID_REQUEST
        assert _init_producer_id(raw, tid, producer=(-1, epoch))[0] == E.INVALID_REQUEST
        assert _init_producer_id(raw, "")[0] == E.INVALID_REQUEST
        assert _describe(cluster, tid) == transaction
        assert _partition(cluster) == partition

        # The right producer id with an epoch it never had: as Kafka's coordinator, which
        # checks the epoch only once no transaction is open, the Ongoing one is aborted under
        # a bumped epoch (CONCURRENT_TRANSACTIONS) and the retry is PRODUCER_FENCED.
        ahead = (producer_id, epoch + 5)
        body = {
            "transactional_id": tid,
            "transaction_timeout": datetime.timedelta(seconds=60),
            "producer_id": ahead[0],
            "producer_epoch": ahead[1],
        }
        answer = raw.call(INIT_PRODUCER_ID, 4, body)
        assert answer.error_code == E.CONCURRENT_TRANSACTIONS
        aborted = _wait_state(cluster, tid, "CompleteAbort")
        assert aborted.producer_epoch == epoch + 1
        assert _init_producer_id(raw, tid, producer=ahead)[0] == E.PRODUCER_FENCED
    assert _describe(cluster, tid) == aborted
    assert b"recovering" not in _partition(cluster).committed


def test_add_partitions_with_an_unknown_topic_adds_none(cluster: Cluster) -> None:
    tid = "tx-unknown-topic"
    producer_id, epoch = _open_transaction(cluster, tid, b"one topic")
    transaction = _describe(cluster, tid)
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        answer = raw.call(
            ADD_PARTITIONS,
            3,
            {
                "v3_and_below_transactional_id": tid,
                "v3_and_below_producer_id": producer_id,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [
                    {"name": TOPIC, "partitions": [0, 7]},
                    {"name": "no-such-topic", "partitions": [0]},
                ],
            },
        )
        codes = {
            (t.name, p.partition_index): p.partition_error_code
            for t in answer.results_by_topic_v3_and_below
            for p in t.results_by_partition
        }
        # As KafkaApis: the unknown partitions fail, the others are not attempted.
        assert codes == {
            (TOPIC, 0): E.OPERATION_NOT_ATTEMPTED,
            (TOPIC, 7): E.UNKNOWN_TOPIC_OR_PARTITION,
            ("no-such-topic", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert _describe(cluster, tid) == transaction
        assert _end_txn(raw, tid, (producer_id, epoch), False) == E.NONE
    _wait_state(cluster, tid, "CompleteAbort")


def test_txn_offset_commit_of_a_stranger_to_the_group_stores_nothing(cluster: Cluster) -> None:
    tid, group = "tx-offsets", "offsets-readers"
    producer_id, epoch = _open_transaction(cluster, tid, b"with offsets")
    producer = (producer_id, epoch)
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        assert _add_offsets(raw, tid, producer) == E.NONE  # the group "ledger-readers"
        assert _retry(lambda: _add_offsets_of(raw, tid, producer, group), int, "") == E.NONE
    with _connect(cluster, _coordinator(cluster, group, GROUP_KEY)) as raw:
        # KIP-447: a member id or generation the group does not have (it has no members).
        code = _retry(
            lambda: _txn_offset_commit(raw, tid, group, producer, 3, "ghost"), int, "commit"
        )
        assert code == E.UNKNOWN_MEMBER_ID
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        assert _end_txn(raw, tid, producer, True) == E.NONE
    _wait_state(cluster, tid, "CompleteCommit")
    assert _committed_offset(cluster, group) == -1


def _add_offsets_of(raw: RawKafka, tid: str, producer: tuple[int, int], group: str) -> int:
    body = {
        "transactional_id": tid,
        "producer_id": producer[0],
        "producer_epoch": producer[1],
        "group_id": group,
    }
    return int(raw.call(ADD_OFFSETS, 3, body).error_code)


@pytest.mark.xfail(
    strict=True,
    reason="Kafka 3.9 verifies a transactional produce with the transaction coordinator "
    "(transaction.partition.verification.enable, KIP-890): a partition not added to the "
    "transaction is INVALID_TXN_STATE to Produce v10 and below; this broker does not verify "
    "and appends, leaving a transaction the coordinator will never end",
)
def test_records_for_a_partition_never_added_are_refused(cluster: Cluster) -> None:
    topic = "never-added"
    _create(cluster, topic, 3)
    tid = "tx-never-added"
    with _connect(cluster, _coordinator(cluster, tid)) as raw:
        error, producer_id, epoch = _init_producer_id(raw, tid)
    assert error == E.NONE
    batch = _transactional_batch([b"unverified"], (producer_id, epoch), 0)
    assert _produce(cluster, batch, tid, topic) == E.INVALID_TXN_STATE


# --- WriteTxnMarkers with an authorizer ---------------------------------------------------------

ANONYMOUS = "User:ANONYMOUS"


def _acl(cluster: Cluster, pattern: ResourcePattern, operation: AclOperation, grant: bool) -> None:
    entry = AccessControlEntry(ANONYMOUS, "*", operation, AclPermissionType.ALLOW)
    store = AclZkStore(cluster.zk)
    store.ensure_paths()
    store.update_acls(pattern, lambda old: old | {entry} if grant else old - {entry})


def _markers(topic: str, producer: tuple[int, int], committed: bool) -> dict[str, Any]:
    return {
        "markers": [
            {
                "producer_id": producer[0],
                "producer_epoch": producer[1],
                "transaction_result": committed,
                "topics": [{"name": topic, "partition_indexes": [0]}],
                "coordinator_epoch": 1_000,
            }
        ]
    }


def _marker_code(raw: RawKafka, topic: str, producer: tuple[int, int]) -> int:
    answer = raw.call(WRITE_TXN_MARKERS, 1, _markers(topic, producer, committed=True))
    return int(answer.markers[0].topics[0].partitions[0].error_code)


def test_write_txn_markers_needs_cluster_action(cluster_factory: ClusterFactory) -> None:
    """Everyone is ANONYMOUS on a PLAINTEXT listener: the brokers' ClusterAction is granted to
    start the cluster and open a transaction, then revoked, so that a forged COMMIT marker
    comes from a client without it."""
    secured = cluster_factory(
        1, {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}, start=False
    )
    cluster_action = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME)
    _acl(secured, cluster_action, AclOperation.CLUSTER_ACTION, grant=True)
    for resource_type in (ResourceType.TOPIC, ResourceType.TRANSACTIONAL_ID, ResourceType.GROUP):
        _acl(
            secured,
            ResourcePattern(resource_type, "*", PatternType.LITERAL),
            AclOperation.ALL,
            grant=True,
        )
    secured.start_all()
    secured.wait_until_serving()
    _create(secured, TOPIC, 1)
    tid = "tx-forged-commit"
    producer = _open_transaction(secured, tid, b"not committed by the producer")
    transaction, partition = _describe(secured, tid), _partition(secured)

    _acl(secured, cluster_action, AclOperation.CLUSTER_ACTION, grant=False)
    with _connect(secured, 0) as raw:
        # A marker for a topic that does not exist changes nothing either way: it shows when
        # the broker has applied the ACL change.
        secured.wait_for(
            lambda: _marker_code(raw, "no-such-topic", producer) == E.CLUSTER_AUTHORIZATION_FAILED,
            30,
            "the revocation of ClusterAction",
        )
        assert _marker_code(raw, TOPIC, producer) == E.CLUSTER_AUTHORIZATION_FAILED
    assert _describe(secured, tid) == transaction
    assert _partition(secured) == partition
    assert b"not committed by the producer" not in partition.committed
