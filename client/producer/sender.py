"""The producer's background I/O: drain ready batches, send them to leaders, settle futures.

One thread. Each round it fails batches past ``delivery.timeout.ms``, refreshes metadata when
asked, groups the ready partitions by leader, and sends one Produce request per leader that has
room under ``max.in.flight.requests.per.connection``. A request holds the first ready batch of
each of its partitions (Kafka's drain: one per partition, so no partition's part of a request
is more than a batch), up to ``max.request.size``, each request to a broker starting where the
last one stopped (Kafka's drainIndex), and goes over the client's produce stream to that broker
(``ChannelPool.stream``: RawData, the batches as raw bytes after a protobuf header). Answers
arrive on the stream's own thread and come back through a queue; only this thread handles
them.

Retries: a retriable error code (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, ...) or a lost
connection puts the batches back at the head of their partition, to be sent after
``retry.backoff.ms``. Errors that mean stale metadata also trigger a metadata refresh, so the
retry goes to the new leader. A batch fails once ``retries`` or ``delivery.timeout.ms`` runs out,
with the error of its last attempt (NOT_ENOUGH_REPLICAS, say: what the user must fix), and
REQUEST_TIMED_OUT only if it was never answered; an idempotent producer then bumps its epoch
(``_reset_sequences_after``). A batch of more than one record refused as too large
(MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE) is split and sent again instead
(``RecordAccumulator.split_and_requeue``), without counting as a retry; a single record too
large fails with the error.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

import grpc

from minikafka.client._channel import RETRIABLE_STATUS, ChannelPool
from minikafka.client._log import event_logger
from minikafka.client.metadata import ClusterMetadata
from minikafka.client.producer.accumulator import ProducerBatch, RecordAccumulator
from minikafka.client.producer.transaction_manager import TransactionManager
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import Node, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code
from minikafka.proto.raw_records import RawProduceRequest
from minikafka.proto.records import MAX_PRODUCER_EPOCH, NO_SEQUENCE

__all__ = ["Sender", "SenderConfig"]

_log = event_logger(__name__)


@dataclass(frozen=True)
class SenderConfig:
    acks: int
    retries: int
    retry_backoff_ms: int
    request_timeout_ms: int
    max_in_flight: int
    max_request_size: int
    idempotent: bool = False


# A Produce that has finished: its broker, batches, and the call or the error that prevented it.
_Completion = tuple[
    Node, list[ProducerBatch], Future[pb.ProduceResponse] | None, BaseException | None
]


class Sender(threading.Thread):
    def __init__(
        self,
        config: SenderConfig,
        accumulator: RecordAccumulator,
        metadata: ClusterMetadata,
        pool: ChannelPool,
        on_sent: Callable[[TopicPartition, int], None] | None = None,
        transactions: TransactionManager | None = None,
    ) -> None:
        super().__init__(name="minikafka-producer-sender", daemon=True)
        self._txn = transactions
        self._config = config
        self._accumulator = accumulator
        self._metadata = metadata
        self._pool = pool
        self._on_sent = on_sent
        self._completions: queue.SimpleQueue[_Completion] = queue.SimpleQueue()
        self._in_flight: dict[int, int] = defaultdict(int)
        # Per broker: where in its ready partitions the next request starts (Kafka's drainIndex).
        self._drain_index: dict[int, int] = defaultdict(int)
        # Per broker: until when (monotonic) a client quota throttles us (its answer's
        # throttle_time_ms): nothing is sent to it before then, as Kafka's clients back off.
        self._throttled_until: dict[int, float] = {}
        self._running = True
        self._force_close = False
        # Idempotence: (producer id, epoch) from InitProducerId, and each partition's next
        # sequence number, given to a batch when it is closed and never changed by retries.
        self._producer_id = -1
        self._producer_epoch = -1
        self._next_sequence: dict[TopicPartition, int] = defaultdict(int)

    def set_producer(self, producer_id: int, producer_epoch: int) -> None:
        """A transactional producer's id and epoch from InitProducerId (its TransactionManager
        asks, with nothing in flight): every partition's sequence starts again at 0."""
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._next_sequence.clear()

    def initiate_close(self, *, force: bool = False) -> None:
        self._running = False
        self._force_close = force
        self._accumulator.close()

    def run(self) -> None:
        accumulator = self._accumulator
        while True:
            if not self._running and (
                self._force_close
                or (not accumulator.has_pending() and not any(self._in_flight.values()))
            ):
                break
            try:
                wait = self._run_once()
            except Exception:  # the thread must survive anything and keep settling futures
                _log.exception("producer.sender_error")
                wait = self._config.retry_backoff_ms / 1000
            accumulator.wakeup.wait(wait)
            accumulator.wakeup.clear()
        if self._force_close:
            accumulator.abort_all(
                error_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, "the producer was closed")
            )

    def _run_once(self) -> float:
        now = time.monotonic()
        self._handle_completions()
        expired = self._accumulator.expire(now)
        for batch in expired:
            batch.fail(_expiry_error(batch, batch.last_error, sent=batch.attempts))
        if expired:
            self._after_failure(expired, _expiry_error(expired[0], expired[0].last_error, sent=0))
        if self._metadata.needs_update():
            try:
                self._metadata.update()
            except KafkaError as exc:
                _log.debug("producer.metadata_failed", error=str(exc))
        txn = self._txn
        txn_wait: float | None = None
        if txn is not None:
            # In an error state the queued batches are dropped (Kafka's abortUndrainedBatches);
            # partitions new to the transaction are added before their first batch leaves.
            txn_error = txn.batch_error()
            if txn_error is not None:
                dropped = self._accumulator.abort_all(txn_error)
                if any(b.builder.base_sequence != NO_SEQUENCE for b in dropped):
                    txn.fail(txn_error, bump_epoch=True)  # a retried batch may have been written
            txn_wait = txn.add_partitions_once()
        elif self._config.idempotent and self._producer_id < 0 and not self._init_producer_id():
            return self._config.retry_backoff_ms / 1000
        ready, wait = self._accumulator.ready_partitions(now)
        if txn is not None and ready:
            sendable = txn.sendable(ready)
            if len(sendable) < len(ready):  # some wait for AddPartitionsToTxn
                wait = min(wait, txn_wait or self._config.retry_backoff_ms / 1000)
            ready = sendable
        by_node: dict[Node, list[TopicPartition]] = defaultdict(list)
        for tp in ready:
            leader = self._metadata.leader_for(tp)
            if leader is None:
                self._metadata.request_update()
                wait = min(wait, self._config.retry_backoff_ms / 1000)
                continue
            by_node[leader].append(tp)
        for node, partitions in by_node.items():
            if self._in_flight[node.id] >= self._config.max_in_flight:
                continue
            throttled_s = self._throttled_until.get(node.id, 0.0) - now
            if throttled_s > 0:
                wait = min(wait, throttled_s)
                continue
            batches = self._drain(node, partitions)
            if batches:
                self._send(node, batches)
        return wait

    def _drain(self, node: Node, partitions: list[TopicPartition]) -> list[ProducerBatch]:
        """The batches of one request to ``node``, as Kafka's drain: one per partition (the
        leader refuses a partition's records beyond segment.bytes as a whole, and recognises
        a retried batch of an idempotent producer only on its own), up to max.request.size
        (the first whatever its size). A batch that does not fit ends the request, and the
        next request to ``node`` starts with it (Kafka's drainIndex): partitions first in
        line, whose batches grow while their request is in flight, would otherwise fill
        every request and starve the others."""
        count = len(partitions)
        start = self._drain_index[node.id] % count
        next_start = start + 1
        batches: list[ProducerBatch] = []
        size = 0
        for i in range(count):
            taken = self._accumulator.drain(
                partitions[(start + i) % count],
                self._config.max_request_size - size,
                max_batches=1,
                fit=bool(batches),
                prepare=self._stamp if self._config.idempotent or self._txn else None,
            )
            if not taken:
                if batches:  # it does not fit: the next request starts with it
                    next_start = start + i
                    break
                continue
            batches.extend(taken)
            size += sum(len(b.data) for b in taken)
        self._drain_index[node.id] = next_start % count
        return batches

    def _init_producer_id(self) -> bool:
        """Ask any broker for a producer id and epoch; False (retry later) if none answers."""
        addresses = [n.address for n in self._metadata.brokers().values()]
        for address in addresses or self._metadata.bootstrap:
            try:
                response = pb_grpc.DataStub(self._pool.get(address)).InitProducerId(
                    pb.InitProducerIdRequest(
                        transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1
                    ),
                    timeout=self._config.request_timeout_ms / 1000,
                )
            except grpc.RpcError as exc:
                _log.debug("producer.init_producer_id_failed", broker=address, error=str(exc))
                continue
            if response.error_code != ErrorCode.NONE:
                error = error_for_code(response.error_code, response.error_message)
                if not error.retriable:
                    self._accumulator.abort_all(error)
                    return False
                continue
            self._producer_id = response.producer_id
            self._producer_epoch = response.producer_epoch
            _log.info(
                "producer.idempotent",
                producer_id=self._producer_id,
                producer_epoch=self._producer_epoch,
            )
            return True
        self._metadata.request_update()
        return False

    def _stamp(self, batch: ProducerBatch) -> None:
        builder = batch.builder
        builder.producer_id = self._producer_id
        builder.producer_epoch = self._producer_epoch
        builder.base_sequence = self._next_sequence[batch.tp]
        builder.is_transactional = self._txn is not None
        self._next_sequence[batch.tp] = (builder.base_sequence + builder.record_count) % (2**31)

    def _send(self, node: Node, batches: list[ProducerBatch]) -> None:
        by_topic: dict[str, dict[int, list[bytes]]] = defaultdict(lambda: defaultdict(list))
        for batch in batches:
            by_topic[batch.tp.topic][batch.tp.partition].append(batch.data)
        # RawData's framing (proto/raw_records.py): the header names the partitions, and each
        # one's batches follow it as they are, copied once into the message gRPC sends.
        header = pb.ProduceRequest(
            acks=self._config.acks, timeout_ms=self._config.request_timeout_ms
        )
        records: list[bytes] = []
        for topic, parts in by_topic.items():
            topic_data = header.topic_data.add(name=topic)
            for p, data in parts.items():
                topic_data.partition_data.add(index=p)
                records.append(data[0] if len(data) == 1 else b"".join(data))
        if self._txn is not None:
            header.transactional_id = self._txn.transactional_id
        request = RawProduceRequest(header, records)
        # The answer may come a little after the broker's own wait for the ISR ends.
        timeout = self._config.request_timeout_ms / 1000 + 5
        self._in_flight[node.id] += 1
        try:
            call = self._pool.stream(node.address, "ProduceStream").send(request, timeout=timeout)
        except Exception as exc:
            self._completions.put((node, batches, None, exc))
            self._accumulator.wakeup.set()
            return

        def done(_: object) -> None:
            self._completions.put((node, batches, call, None))
            self._accumulator.wakeup.set()

        call.add_done_callback(done)
        if self._on_sent is not None:
            for batch in batches:
                self._on_sent(batch.tp, len(batch.data))

    def _handle_completions(self) -> None:
        while True:
            try:
                node, batches, call, error = self._completions.get_nowait()
            except queue.Empty:
                return
            self._in_flight[node.id] -= 1
            if call is not None:
                try:
                    response = call.result()
                except grpc.RpcError as exc:
                    error = exc
            if error is not None:
                self._handle_transport_error(node, batches, error)
                continue
            if response.throttle_time_ms > 0:
                self._throttled_until[node.id] = max(
                    self._throttled_until.get(node.id, 0.0),
                    time.monotonic() + response.throttle_time_ms / 1000,
                )
            self._handle_response(batches, response)

    def _handle_transport_error(
        self, node: Node, batches: list[ProducerBatch], error: BaseException
    ) -> None:
        if self._config.acks == 0:
            self._settle(batches, lambda b: b.complete(-1, -1))
            return
        status = error.code() if isinstance(error, grpc.RpcError) else None
        self._metadata.request_update()
        if status in RETRIABLE_STATUS:
            kafka_error = error_for_code(
                ErrorCode.NETWORK_EXCEPTION, f"produce to broker {node.id} failed: {status}"
            )
        else:
            kafka_error = error_for_code(
                ErrorCode.UNKNOWN_SERVER_ERROR, f"produce to broker {node.id}: {error}"
            )
        self._retry_or_fail(batches, kafka_error)

    def _handle_response(self, batches: list[ProducerBatch], response: pb.ProduceResponse) -> None:
        if self._config.acks == 0:
            self._settle(batches, lambda b: b.complete(-1, -1))
            return
        results: dict[TopicPartition, pb.ProduceResponse.PartitionProduceResponse] = {}
        for topic in response.responses:
            for part in topic.partition_responses:
                results[TopicPartition(topic.name, part.index)] = part
        by_tp: dict[TopicPartition, list[ProducerBatch]] = defaultdict(list)
        for batch in batches:
            by_tp[batch.tp].append(batch)
        for tp, tp_batches in by_tp.items():
            result = results.get(tp)
            if result is None:
                self._retry_or_fail(
                    tp_batches,
                    error_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"no answer for {tp}"),
                )
                continue
            if result.error_code == ErrorCode.NONE:
                self._accumulator.done(tp_batches)
                offset = result.base_offset
                for batch in tp_batches:  # batches of one partition got consecutive offsets
                    batch.complete(offset, result.log_append_time_ms)
                    offset += batch.record_count
                continue
            error = error_for_code(result.error_code, result.error_message)
            if error.invalid_metadata:
                self._metadata.request_update()
            if error.code in _TOO_LARGE:
                tp_batches = self._split(tp_batches, error)
            self._retry_or_fail(tp_batches, error)

    def _split(self, batches: list[ProducerBatch], error: KafkaError) -> list[ProducerBatch]:
        """Split the batches of more than one record; the others (a record too large on its
        own) to be failed."""
        whole = []
        for batch in batches:
            if batch.record_count < 2:
                whole.append(batch)
                continue
            builder = batch.builder
            if builder.base_sequence != NO_SEQUENCE and (
                builder.producer_id,
                builder.producer_epoch,
            ) == (self._producer_id, self._producer_epoch):
                # Refused, so not written: its pieces take its sequence numbers again. (With
                # the epoch bumped since, they start the new epoch's sequence instead.) Nothing
                # of the partition was stamped after it: the partition was muted.
                self._next_sequence[batch.tp] = builder.base_sequence
            pieces = self._accumulator.split_and_requeue(batch)
            _log.warning(
                "producer.batch_split",
                partition=str(batch.tp),
                records=batch.record_count,
                bytes=len(batch.data),
                batches=len(pieces),
                error=error.code.name,
            )
        return whole

    def _retry_or_fail(self, batches: list[ProducerBatch], error: KafkaError) -> None:
        now = time.monotonic()
        retry: list[ProducerBatch] = []
        failed: dict[ProducerBatch, KafkaError] = {}
        for batch in batches:
            if not error.retriable or batch.attempts >= self._config.retries or self._force_close:
                failed[batch] = error
            elif self._accumulator.expired_in_flight(batch, now):
                failed[batch] = _expiry_error(batch, error, sent=batch.attempts + 1)
            else:
                batch.last_error = error
                retry.append(batch)
        if retry:
            _log.debug(
                "producer.retry",
                partitions=sorted({str(b.tp) for b in retry}),
                error=error.code.name,
            )
            self._accumulator.requeue(retry, now + self._config.retry_backoff_ms / 1000)
        if failed:
            self._settle(list(failed), lambda b: b.fail(failed[b]))
            self._after_failure(list(failed), next(iter(failed.values())))

    def _after_failure(self, failed: list[ProducerBatch], error: KafkaError) -> None:
        """Batches failed for good: an idempotent producer bumps its epoch now
        (``_reset_sequences_after``); a transactional one's transaction must be aborted, and
        the abort bumps the epoch when a failed batch had a sequence number (KIP-360)."""
        if self._txn is None:
            self._reset_sequences_after(failed)
            return
        with_sequence = any(b.builder.base_sequence != NO_SEQUENCE for b in failed)
        self._txn.fail(error, bump_epoch=with_sequence)

    def _reset_sequences_after(self, failed: list[ProducerBatch]) -> None:
        """A batch with a sequence number failed for good. Its partition's next batch would be
        out of sequence at the leader, and whether the failed one was written is not always
        known (a lost connection, a timeout after the append). So, as Kafka does (KIP-360),
        the producer bumps its epoch and every partition's sequence starts again at 0; the
        leader takes a newer epoch starting at 0 and refuses the older one from then on. A
        partition's batch already stamped with the old epoch is settled before the partition
        sends again (one request in flight per partition), so none is refused. When the epoch
        runs out, a new producer id is taken instead."""
        current = (self._producer_id, self._producer_epoch)
        if self._producer_id < 0 or not any(
            (b.builder.producer_id, b.builder.producer_epoch) == current for b in failed
        ):
            return
        if self._producer_epoch < MAX_PRODUCER_EPOCH - 1:
            self._producer_epoch += 1
        else:
            self._producer_id = self._producer_epoch = -1  # InitProducerId before the next drain
        self._next_sequence.clear()
        _log.info(
            "producer.epoch_bumped",
            producer_id=self._producer_id,
            producer_epoch=self._producer_epoch,
            partitions=sorted({str(b.tp) for b in failed}),
        )

    def _settle(
        self, batches: list[ProducerBatch], action: Callable[[ProducerBatch], None]
    ) -> None:
        self._accumulator.done(batches)
        for batch in batches:
            action(batch)


# A batch the leader refuses for its size: over max.message.bytes, or over segment.bytes.
_TOO_LARGE = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})


def _expiry_error(batch: ProducerBatch, last: KafkaError | None, *, sent: int) -> KafkaError:
    """What a batch fails with once delivery.timeout.ms has passed: the error of its last
    attempt (NOT_ENOUGH_REPLICAS, NOT_LEADER_OR_FOLLOWER, a lost connection, ...), which is
    what kept it from being written, as Kafka's producer reports it; REQUEST_TIMED_OUT when it
    was never sent (no leader known, or nothing answered)."""
    expiring = f"expiring {batch.record_count} record(s) for {batch.tp}"
    if last is None:
        return error_for_code(
            ErrorCode.REQUEST_TIMED_OUT,
            f"{expiring}: delivery.timeout.ms has passed since the batch was created",
        )
    return error_for_code(
        last.code,
        f"{last.message} ({expiring} after {sent} attempt(s): delivery.timeout.ms has passed "
        "since the batch was created)",
    )
