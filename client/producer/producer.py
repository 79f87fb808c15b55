"""``Producer``: kafka-python's shape over minikafka's gRPC brokers.

    from minikafka import Producer
    with Producer(bootstrap_servers="127.0.0.1:9092", acks="all") as producer:
        future = producer.send("orders", b"payload", key=b"customer-7")
        print(future.result(timeout=10))   # RecordMetadata(topic, partition, offset, timestamp)

Facade -> accumulator (batches per partition, ``linger.ms``/``batch.size``/``buffer.memory``)
-> sender thread (one Produce per leader, retries, metadata refresh). ``send`` never does I/O
except to wait for a topic's first metadata (up to ``max.block.ms``).

Transactions (Kafka's API, ``transactional_id``; transaction_manager.py has the rules)::

    producer = Producer(bootstrap_servers=..., transactional_id="etl-1")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("out", b"v")
    producer.send_offsets_to_transaction({tp: OffsetAndMetadata(43)}, consumer.group_metadata())
    producer.commit_transaction()          # or abort_transaction()

Thread-safe: ``send`` may be called from many threads at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from minikafka.client._channel import ChannelPool, parse_bootstrap_servers
from minikafka.client._log import event_logger
from minikafka.client._security import ClientSecurity
from minikafka.client.consumer.group_metadata import ConsumerGroupMetadata
from minikafka.client.metadata import ClusterMetadata
from minikafka.client.producer.accumulator import AppendedRun, RecordAccumulator
from minikafka.client.producer.future import FutureRecordMetadata, SendBatchFuture, SentRun
from minikafka.client.producer.partitioner import Partitioner, StickyPartitioner
from minikafka.client.producer.sender import Sender, SenderConfig
from minikafka.client.producer.transaction_manager import TransactionManager, TxnState
from minikafka.proto.common import OffsetAndMetadata, TopicPartition
from minikafka.proto.errors import ErrorCode, InvalidConfigError, KafkaError, error_for_code
from minikafka.proto.records import Compression, Header, RecordBatchBuilder, scan_records

__all__ = ["Producer"]

_ACKS = {"all": -1, "-1": -1, -1: -1, 1: 1, "1": 1, 0: 0, "0": 0}
Serializer = Callable[[Any], bytes | None]

_log = event_logger(__name__)


class _TopicInfo(NamedTuple):
    """A topic's partitions as of one metadata version (send's fast path reads only this)."""

    version: int
    partitions: list[int]
    tps: dict[int, TopicPartition]  # partition -> its TopicPartition, made once
    available: list[int]  # partitions with a leader


def _column(
    name: str, items: Sequence[Any] | None, serializer: Serializer | None
) -> tuple[bytes | None, ...] | None:
    """A key or value column for ``send_batch``: serialized, as a tuple of bytes or None."""
    if items is None:
        return None
    column = tuple(items) if serializer is None else tuple(serializer(x) for x in items)
    try:
        scan_records(None, column, None)  # types only: exact bytes or None pass as they are
    except TypeError:
        column = tuple(x if x is None or type(x) is bytes else _to_bytes(name, x) for x in column)
    return column


def _to_bytes(name: str, item: object) -> bytes:
    if isinstance(item, bytearray | memoryview):
        return bytes(item)
    raise TypeError(f"{name} must be bytes (or give a {name}_serializer)")


class Producer:
    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] = "127.0.0.1:9092",
        *,
        acks: str | int = "all",
        linger_ms: int = 5,
        batch_size: int = 16_384,
        buffer_memory: int = 33_554_432,
        compression_type: str | None = None,
        retries: int = 2_147_483_647,
        retry_backoff_ms: int = 100,
        delivery_timeout_ms: int = 120_000,
        request_timeout_ms: int = 30_000,
        max_in_flight_requests_per_connection: int = 5,
        max_request_size: int = 1_048_576,
        max_block_ms: int = 60_000,
        enable_idempotence: bool | None = None,
        partitioner: Partitioner | None = None,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
        client_id: str = "minikafka-producer",
        security: ClientSecurity | Mapping[str, str] | None = None,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60_000,
    ) -> None:
        if acks not in _ACKS:
            raise InvalidConfigError(f"acks must be all, -1, 0 or 1, not {acks!r}")
        if transactional_id is not None:
            if not transactional_id:
                raise InvalidConfigError("transactional_id must not be empty (None for none)")
            if enable_idempotence is False:
                raise InvalidConfigError(
                    "Cannot set a transactional.id without also enabling idempotence."
                )
            enable_idempotence = True
        if enable_idempotence is None:
            # Kafka's default since 3.0: on, unless the other settings rule it out.
            enable_idempotence = (
                _ACKS[acks] == -1 and retries > 0 and max_in_flight_requests_per_connection <= 5
            )
        elif enable_idempotence and (
            _ACKS[acks] != -1 or retries == 0 or max_in_flight_requests_per_connection > 5
        ):
            raise InvalidConfigError(
                "enable_idempotence needs acks=all, retries > 0 and "
                "max_in_flight_requests_per_connection <= 5"
            )
        self.idempotent = enable_idempotence
        if delivery_timeout_ms < linger_ms + request_timeout_ms:
            raise InvalidConfigError(
                "delivery.timeout.ms should be equal to or larger than linger.ms + "
                "request.timeout.ms"
            )
        if batch_size <= 0 or buffer_memory <= 0 or max_in_flight_requests_per_connection <= 0:
            raise InvalidConfigError("batch_size, buffer_memory and max_in_flight must be positive")
        self.client_id = client_id
        self._acks = _ACKS[acks]
        self._max_block_s = max_block_ms / 1000
        self._max_request_size = max_request_size
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._pool = ChannelPool(ClientSecurity.of(security), client_id)
        self._metadata = ClusterMetadata(
            self._pool,
            parse_bootstrap_servers(bootstrap_servers),
            request_timeout_ms=request_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            allow_auto_topic_creation=True,  # as Kafka's producers
        )
        self._sticky = StickyPartitioner()
        self._partitioner: Partitioner = partitioner or self._sticky
        self._lock = threading.Lock()
        self._topics: dict[str, _TopicInfo] = {}
        self._accumulator = RecordAccumulator(
            batch_size=batch_size,
            linger_ms=linger_ms,
            buffer_memory=buffer_memory,
            compression=Compression.parse(compression_type),
            delivery_timeout_ms=delivery_timeout_ms,
            max_request_size=max_request_size,
        )
        self._txn: TransactionManager | None = None
        if transactional_id is not None:
            self._txn = TransactionManager(
                transactional_id,
                transaction_timeout_ms,
                self._metadata,
                self._pool,
                request_timeout_ms=request_timeout_ms,
                retry_backoff_ms=retry_backoff_ms,
                max_block_ms=max_block_ms,
            )
        self._sender = Sender(
            SenderConfig(
                acks=self._acks,
                retries=retries,
                retry_backoff_ms=retry_backoff_ms,
                request_timeout_ms=request_timeout_ms,
                max_in_flight=max_in_flight_requests_per_connection,
                max_request_size=max_request_size,
                idempotent=enable_idempotence,
            ),
            self._accumulator,
            self._metadata,
            self._pool,
            transactions=self._txn,
        )
        if self._txn is not None:
            self._txn.accumulator = self._accumulator
            self._txn.on_new_epoch = self._sender.set_producer
        self._closed = False
        self._sender.start()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def partitions_for(self, topic: str) -> set[int]:
        partitions = self._metadata.wait_for_topic(topic, self._max_block_s)
        return set(partitions)

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
        timestamp_ms: int | None = None,
    ) -> FutureRecordMetadata:
        """Queue a record; the future resolves once the broker has acknowledged it."""
        if self._closed:
            raise error_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, "send after the producer closed")
        if self._key_serializer is not None:
            key = self._key_serializer(key)
        if self._value_serializer is not None:
            value = self._value_serializer(value)
        if type(value) is not bytes:
            if value is not None:
                value = _to_bytes("value", value)
            elif key is None:
                raise InvalidConfigError("send needs a value or a key (or both)")
        if key is not None and type(key) is not bytes:
            key = _to_bytes("key", key)
        header_tuple: tuple[Header, ...] = ()
        if headers:
            header_tuple = tuple((str(k), None if v is None else bytes(v)) for k, v in headers)
            size = RecordBatchBuilder.estimate_record_size(key, value, header_tuple)
        else:  # estimate_record_size without headers, inline: this runs for every record
            size = 21 + (len(key) if key else 0) + (len(value) if value else 0)
        if size > self._max_request_size:
            raise error_for_code(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"the record is {size} bytes, more than max.request.size "
                f"({self._max_request_size})",
            )
        block_s = self._max_block_s  # max.block.ms bounds the metadata and buffer waits together
        info = self._topics.get(topic)
        if info is None or info.version != self._metadata.version:
            began = time.monotonic()
            info = self._topic_info(topic)
            block_s -= time.monotonic() - began
        sticky = partition is None and key is None and self._partitioner is self._sticky
        if sticky:
            partition = self._sticky.unkeyed(topic, info.partitions, info.available)
        elif partition is None:
            with self._lock:
                partition = self._partitioner(topic, key, info.partitions, info.available)
        tp = info.tps.get(partition)
        if tp is None:
            began = time.monotonic()
            tp = self._added_partition(topic, partition, info, block_s)
            block_s -= time.monotonic() - began
        if self._txn is not None:
            self._txn.maybe_add_partition(tp)
        timestamp = time.time_ns() // 1_000_000 if timestamp_ms is None else timestamp_ms
        future, batch_full = self._accumulator.append(
            tp, timestamp, key, value, header_tuple, size, block_s
        )
        if batch_full and sticky:
            self._sticky.batch_full(topic, partition, info.partitions, info.available)
        return future

    def send_batch(
        self,
        topic: str,
        values: Sequence[Any],
        *,
        keys: Sequence[Any] | None = None,
        partition: int | None = None,
        headers: Sequence[Iterable[tuple[str, bytes | None]] | None] | None = None,
        timestamp_ms: int | None = None,
    ) -> SendBatchFuture:
        """Queue many records in one call: ``values[i]`` with ``keys[i]`` and ``headers[i]``
        (each column optional but ``values``), all with one timestamp (now, or
        ``timestamp_ms``). The same records in the same batches as a ``send`` per record, in
        order, but appended by the C record loop a batch at a time, without an object or a
        lock per record::

            future = producer.send_batch("orders", [b"a", b"b", b"c"])
            future.result(timeout=10)    # [RecordMetadata, ...] in the order given
            future.exceptions()          # each record's error, None where it was written
            future[1].result()           # one record's FutureRecordMetadata

        Partitions as ``send``: ``partition`` for all, else the partitioner per key, else the
        sticky partition, which moves on whenever a batch fills. Keys and values must be
        bytes (bytearray and memoryview are copied) or None after the serializers; every record
        is checked (types, a key or a value, max.request.size) before any is queued, so an
        error raised here queued none. After that, blocking on ``buffer.memory`` between
        batches may end in a timeout (max.block.ms, for the call as a whole) with some records
        queued: the exception's ``queued`` holds their ``SendBatchFuture``. Each record's
        outcome is its own (a batch may fail while another succeeds)."""
        if self._closed:
            raise error_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, "send after the producer closed")
        began = time.monotonic()
        value_column = _column("value", values, self._value_serializer)
        assert value_column is not None
        count = len(value_column)
        key_column = _column("key", keys, self._key_serializer)
        header_column = None
        if headers is not None:
            header_column = tuple(
                tuple((str(k), None if v is None else bytes(v)) for k, v in h) if h else None
                for h in headers
            )
        for name, column in (("keys", key_column), ("headers", header_column)):
            if column is not None and len(column) != count:
                raise ValueError(f"{count} values but {len(column)} {name}")
        largest, empty = scan_records(key_column, value_column, header_column)
        if empty >= 0:
            raise InvalidConfigError(f"record {empty} has neither a value nor a key")
        if largest > self._max_request_size:
            raise error_for_code(
                ErrorCode.MESSAGE_TOO_LARGE,
                f"a record is {largest} bytes, more than max.request.size "
                f"({self._max_request_size})",
            )
        timestamp = time.time_ns() // 1_000_000 if timestamp_ms is None else timestamp_ms
        deadline = began + self._max_block_s  # the metadata and buffer waits together
        info = self._topics.get(topic)
        if info is None or info.version != self._metadata.version:
            info = self._topic_info(topic)
        runs: list[SentRun] = []
        try:
            if partition is not None:
                self._append_all(
                    topic, info, partition, timestamp, key_column, value_column, header_column,
                    range(count), deadline, runs,
                )  # fmt: skip
            elif key_column is None and self._partitioner is self._sticky:
                self._append_sticky(
                    topic, info, timestamp, value_column, header_column, deadline, runs
                )
            else:
                self._append_partitioned(
                    topic, info, timestamp, key_column, value_column, header_column, deadline,
                    runs,
                )  # fmt: skip
        except BaseException as exc:
            if runs:  # some records are queued: their futures go with the error
                exc.queued = SendBatchFuture(topic, timestamp, runs)  # type: ignore[attr-defined]
            raise
        return SendBatchFuture(topic, timestamp, runs)

    def _append_sticky(
        self,
        topic: str,
        info: _TopicInfo,
        timestamp: int,
        values: tuple[bytes | None, ...],
        headers: tuple[tuple[Header, ...] | None, ...] | None,
        deadline: float,
        runs: list[SentRun],
        positions: Sequence[int] | None = None,
    ) -> None:
        """Unkeyed records to the sticky partition, which moves on each time a batch fills;
        ``positions``: their indices in the call (default: 0, 1, ...)."""
        where: Sequence[int] = range(len(values)) if positions is None else positions
        appended: list[AppendedRun] = []
        start = 0
        while start < len(values):
            partition = self._sticky.unkeyed(topic, info.partitions, info.available)
            tp = info.tps[partition]
            if self._txn is not None:
                self._txn.maybe_add_partition(tp)
            appended.clear()
            try:
                start, full = self._accumulator.append_many(
                    tp, timestamp, None, values, headers, start, deadline, appended
                )
            finally:
                runs += (
                    SentRun(r.result, r.first, where[r.start : r.stop], partition) for r in appended
                )
            if full:
                self._sticky.batch_full(topic, partition, info.partitions, info.available)

    def _append_partitioned(
        self,
        topic: str,
        info: _TopicInfo,
        timestamp: int,
        keys: tuple[bytes | None, ...] | None,
        values: tuple[bytes | None, ...],
        headers: tuple[tuple[Header, ...] | None, ...] | None,
        deadline: float,
        runs: list[SentRun],
    ) -> None:
        """Records to the partitions the partitioner picks, each partition's appended at once
        (their order within a partition kept: the only order Kafka promises). With the sticky
        partitioner, the records without a key go to the sticky partition as ``send`` sends
        them, moving on each time a batch fills."""
        groups: dict[int, list[int]] = {}
        unkeyed: list[int] = []
        sticky = self._partitioner is self._sticky
        with self._lock:
            for i in range(len(values)):
                key = None if keys is None else keys[i]
                if key is None and sticky:
                    unkeyed.append(i)
                    continue
                p = self._partitioner(topic, key, info.partitions, info.available)
                groups.setdefault(p, []).append(i)
        if unkeyed:
            self._append_sticky(
                topic, info, timestamp,
                tuple(values[i] for i in unkeyed),
                None if headers is None else tuple(headers[i] for i in unkeyed),
                deadline, runs, unkeyed,
            )  # fmt: skip
        for partition, positions in groups.items():
            self._append_all(
                topic, info, partition, timestamp,
                None if keys is None else tuple(keys[i] for i in positions),
                tuple(values[i] for i in positions),
                None if headers is None else tuple(headers[i] for i in positions),
                positions, deadline, runs,
            )  # fmt: skip

    def _append_all(
        self,
        topic: str,
        info: _TopicInfo,
        partition: int,
        timestamp: int,
        keys: tuple[bytes | None, ...] | None,
        values: tuple[bytes | None, ...],
        headers: tuple[tuple[Header, ...] | None, ...] | None,
        positions: Sequence[int],
        deadline: float,
        runs: list[SentRun],
    ) -> None:
        """Every record of the columns to ``partition``; ``positions``: their indices in the
        call."""
        tp = info.tps.get(partition)
        if tp is None:
            tp = self._added_partition(topic, partition, info, deadline - time.monotonic())
        if self._txn is not None:
            self._txn.maybe_add_partition(tp)
        appended: list[AppendedRun] = []
        start = 0
        try:
            while start < len(values):
                start, _ = self._accumulator.append_many(
                    tp, timestamp, keys, values, headers, start, deadline, appended
                )
        finally:
            runs += (
                SentRun(r.result, r.first, positions[r.start : r.stop], partition) for r in appended
            )

    def _added_partition(
        self, topic: str, partition: int, info: _TopicInfo, block_s: float
    ) -> TopicPartition:
        """A partition beyond the topic's known count may have been added a moment ago: wait
        (max.block.ms) for metadata that has it, as Kafka's producer does. One below 0 never
        will be."""
        if partition < 0:
            raise error_for_code(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"partition {partition} of topic {topic} is not in the range "
                f"[0, {len(info.partitions)})",
            )
        self._metadata.wait_for_topic(topic, max(block_s, 0.0), partition=partition)
        tp = self._topic_info(topic).tps.get(partition)
        if tp is None:  # the topic was deleted since
            raise error_for_code(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"partition {partition} of topic {topic}"
            )
        return tp

    def _topic_info(self, topic: str) -> _TopicInfo:
        version = self._metadata.version
        partitions = self._metadata.partitions_for(topic)
        if not partitions:  # the first send to a topic waits (max.block.ms) for its metadata
            partitions = self._metadata.wait_for_topic(topic, self._max_block_s)
        ordered = sorted(partitions)
        info = _TopicInfo(
            version,
            ordered,
            {p: TopicPartition(topic, p) for p in ordered},
            [p for p in ordered if partitions[p].leader >= 0],
        )
        self._topics[topic] = info
        return info

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now, and wait until every send so far has completed."""
        self._accumulator.begin_flush()
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            for result in self._accumulator.pending():
                remaining = None if deadline is None else max(deadline - time.monotonic(), 0)
                if not result.wait(remaining):
                    raise error_for_code(
                        ErrorCode.REQUEST_TIMED_OUT,
                        f"flush timed out after {timeout} s with batches not yet acknowledged",
                    )
        finally:
            self._accumulator.end_flush()

    # --- transactions ----------------------------------------------------------------------

    def _transactions(self) -> TransactionManager:
        if self._txn is None:
            raise error_for_code(
                ErrorCode.INVALID_TXN_STATE,
                "Transactional method invoked on a non-transactional producer: "
                "give it a transactional_id",
            )
        if self._closed:
            raise error_for_code(ErrorCode.INVALID_TXN_STATE, "the producer is closed")
        return self._txn

    def init_transactions(self) -> None:
        """Find the transaction coordinator and get this transactional id's producer id and
        epoch: any earlier producer with the same id is fenced from now on, and a transaction
        it left open is finished (aborted) first. Call once, before anything else."""
        self._transactions().init_transactions()

    def begin_transaction(self) -> None:
        """Start a transaction (no request goes out until the first send)."""
        self._transactions().begin_transaction()

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
        group_metadata: ConsumerGroupMetadata | str,
    ) -> None:
        """Commit ``offsets`` (the next offset to read, per partition) for the consumer group
        as part of the transaction: the group sees them only if it commits.
        ``group_metadata``: ``consumer.group_metadata()`` (the coordinator then refuses a
        consumer that lost its partitions in a rebalance), or just the group id."""
        group = (
            ConsumerGroupMetadata(group_metadata)
            if isinstance(group_metadata, str)
            else group_metadata
        )
        chosen = {
            TopicPartition(*tp): v if isinstance(v, OffsetAndMetadata) else OffsetAndMetadata(v)
            for tp, v in offsets.items()
        }
        self._transactions().send_offsets_to_transaction(chosen, group)

    def commit_transaction(self) -> None:
        """Send every queued record, wait for the answers, then commit (EndTxn): the records
        and offsets of the transaction become visible to read_committed consumers together.
        Raises TransactionAbortableError if a record failed (then call abort_transaction)."""
        self._transactions().commit_transaction(self.flush)

    def abort_transaction(self) -> None:
        """Drop the records not sent yet (their futures fail with TransactionAbortedError),
        wait for those in flight, then abort (EndTxn): read_committed consumers never see
        any record of the transaction."""
        self._transactions().abort_transaction(self._wait_in_flight)

    def _wait_in_flight(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for result in self._accumulator.pending():
            if not result.wait(max(deadline - time.monotonic(), 0)):
                raise error_for_code(
                    ErrorCode.REQUEST_TIMED_OUT,
                    f"Timeout expired after {timeout * 1000:.0f}ms while awaiting the "
                    "transaction's requests in flight",
                )

    def close(self, timeout: float | None = None) -> None:
        """Send what is queued (waiting up to ``timeout`` seconds), then stop. A transaction
        still open is aborted first, as Kafka's producer does on a graceful close."""
        if self._closed:
            return
        txn = self._txn
        if (
            txn is not None
            and timeout != 0
            and txn.state in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR)
        ):
            try:
                txn.abort_transaction(self._wait_in_flight)
            except KafkaError as exc:  # closing anyway; the coordinator times it out
                _log.warning("producer.abort_on_close_failed", error=str(exc))
        self._closed = True
        self._sender.initiate_close(force=timeout == 0)
        self._sender.join(timeout)
        if self._sender.is_alive():
            self._sender.initiate_close(force=True)
            self._sender.join()
        self._pool.close()
