"""The transactional ids this broker coordinates: Kafka's TransactionStateManager.

A transactional id belongs to partition ``abs(java_hash(id)) % N`` of ``__transaction_state``
(N = ``transaction.state.log.num.partitions``); this broker holds the ids of the partitions it
leads, one cache entry per partition stamped with the coordinator epoch (the partition's leader
epoch when it was loaded). While a partition loads, its ids answer COORDINATOR_LOAD_IN_PROGRESS;
the ids of a partition it does not lead, NOT_COORDINATOR.

Loading reads the partition from its log start: the last record per key wins, a tombstone
forgets the id, a key of an unknown version is skipped (records in proto/transaction_log.py).

Every change is one record appended with acks=all (``append_transaction_to_log``); the cache
takes the change only after the append, and only if the partition is still loaded under the
same coordinator epoch (else NOT_COORDINATOR: a newer leader owns the id). Append errors are
translated as Kafka's coordinator does (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ...).

Not thread-safe: every method runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import structlog

from minikafka.broker.group.coordinator import partition_for
from minikafka.broker.transaction.transaction_metadata import (
    EXPIRATION_ALLOWED,
    TransactionMetadata,
    TxnTransitMetadata,
)
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import decode_records, encode_batch, iter_batch_headers
from minikafka.proto.transaction_log import (
    TransactionState,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

__all__ = [
    "CoordinatorEpochAndMetadata",
    "ListedTransaction",
    "TransactionConfig",
    "TransactionStateLog",
    "TransactionStateManager",
    "TransactionalIdAndProducerIdEpoch",
]

_log = structlog.get_logger(__name__)

# Tombstones of expired ids go out in batches of at most this many records (Kafka fills a
# batch up to the partition's max.message.bytes; a tombstone is a few dozen bytes).
_TOMBSTONES_PER_BATCH = 1000


@dataclass(frozen=True)
class TransactionConfig:
    """The broker keys the transaction coordinator reads (Kafka's names and defaults)."""

    transaction_state_log_num_partitions: int = 50  # transaction.state.log.num.partitions
    transaction_max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    transactional_id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    # transaction.abort.timed.out.transaction.cleanup.interval.ms
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    # transaction.remove.expired.transaction.cleanup.interval.ms
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    transaction_state_log_load_buffer_size: int = 5 * 1024 * 1024
    offsets_topic_num_partitions: int = 50  # offsets.topic.num.partitions (AddOffsetsToTxn)
    request_timeout_ms: int = 30_000  # request.timeout.ms: tombstone appends
    # Between rounds of WriteTxnMarkers that left partitions to retry, and between retries of
    # a Complete* append that found too few replicas (Kafka: its sender thread's next poll).
    marker_retry_backoff_ms: int = 100


class TransactionStateLog(Protocol):
    """``__transaction_state`` as seen from this broker (the server adapts its ReplicaManager;
    the shape of broker/group's OffsetsLog)."""

    def leader_epoch(self, partition: int) -> int | None:
        """This broker's leader epoch for the partition; None when it does not lead it."""
        ...

    async def append(self, partition: int, records: bytes, timeout_ms: int) -> tuple[int, int]:
        """Append batches with acks=all: (error code, base offset)."""
        ...

    def read(self, partition: int, start: int, max_bytes: int) -> tuple[bytes, int]:
        """Whole batches from ``start`` (-1 = the log start) up to the log end:
        (batches, log end offset)."""
        ...


class CoordinatorEpochAndMetadata(NamedTuple):
    coordinator_epoch: int
    metadata: TransactionMetadata


class TransactionalIdAndProducerIdEpoch(NamedTuple):
    transactional_id: str
    producer_id: int
    producer_epoch: int


class ListedTransaction(NamedTuple):
    """One row of ListTransactions."""

    transactional_id: str
    producer_id: int
    state: str  # Kafka's name: "Ongoing"


@dataclass
class _PartitionEntry:
    """Kafka's TxnMetadataCacheEntry."""

    coordinator_epoch: int
    transactions: dict[str, TransactionMetadata] = field(default_factory=dict)


# Append errors and what the client is told (Kafka's TransactionStateManager mapping).
_APPEND_ERRORS: dict[int, ErrorCode] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def _append_error(code: int) -> ErrorCode:
    if code in _APPEND_ERRORS:
        return _APPEND_ERRORS[code]
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


class TransactionStateManager:
    """The cache of transactional ids per ``__transaction_state`` partition (module docstring)."""

    def __init__(
        self,
        config: TransactionConfig,
        log: TransactionStateLog,
        *,
        time_ms: Callable[[], int],
        partition_count: Callable[[], int] | None = None,
    ) -> None:
        self.config = config
        self._log = log
        self._time_ms = time_ms
        self._partition_count = partition_count or (
            lambda: config.transaction_state_log_num_partitions
        )
        self._loading: dict[int, int] = {}  # partition -> coordinator epoch being loaded
        self._cache: dict[int, _PartitionEntry] = {}
        self.shutting_down = False

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self._partition_count())

    @property
    def is_loading(self) -> bool:
        return bool(self._loading)

    def owned_partitions(self) -> dict[int, int]:
        """Loaded partitions and their coordinator epochs."""
        return {p: e.coordinator_epoch for p, e in self._cache.items()}

    def coordinator_epoch(self, partition: int) -> int | None:
        """The epoch of the partition's cache or of its load in progress."""
        entry = self._cache.get(partition)
        return entry.coordinator_epoch if entry is not None else self._loading.get(partition)

    # --- lookups ------------------------------------------------------------------------------

    def get_transaction_state(
        self, transactional_id: str, create: TransactionMetadata | None = None
    ) -> tuple[ErrorCode, CoordinatorEpochAndMetadata | None]:
        """(NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, None), or (NONE, the id's state
        or None when unknown). With ``create``, an unknown id is added as ``create``."""
        partition = self.partition_for(transactional_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None
        entry = self._cache.get(partition)
        if entry is None:
            return ErrorCode.NOT_COORDINATOR, None
        metadata = entry.transactions.get(transactional_id)
        if metadata is None and create is not None:
            metadata = entry.transactions[transactional_id] = create
        if metadata is None:
            return ErrorCode.NONE, None
        return ErrorCode.NONE, CoordinatorEpochAndMetadata(entry.coordinator_epoch, metadata)

    def transactions(self) -> Iterator[tuple[int, TransactionMetadata]]:
        """(coordinator epoch, state) of every cached id."""
        for entry in list(self._cache.values()):
            for metadata in list(entry.transactions.values()):
                yield entry.coordinator_epoch, metadata

    def timed_out_transactions(self) -> list[TransactionalIdAndProducerIdEpoch]:
        """Ongoing transactions older than their timeout, not in the middle of a change."""
        now = self._time_ms()
        return [
            TransactionalIdAndProducerIdEpoch(m.transactional_id, m.producer_id, m.producer_epoch)
            for _, m in self.transactions()
            if m.pending_state is None
            and m.state is TransactionState.ONGOING
            and m.txn_start_timestamp + m.txn_timeout_ms < now
        ]

    def list_transaction_states(
        self, producer_ids: Iterable[int], state_names: Iterable[str], duration_filter_ms: int
    ) -> tuple[ErrorCode, list[str], list[ListedTransaction]]:
        """ListTransactions: (error, unknown state filters, rows). Empty filters match all;
        ``duration_filter_ms`` >= 0 keeps transactions running longer than it (v1)."""
        if self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [], []
        wanted_ids = set(producer_ids)
        names = list(dict.fromkeys(state_names))
        unknown = [n for n in names if TransactionState.from_kafka_name(n) is None]
        wanted_states = {TransactionState.from_kafka_name(n) for n in names} - {None}
        now = self._time_ms()
        rows = [
            ListedTransaction(m.transactional_id, m.producer_id, m.state.kafka_name)
            for _, m in self.transactions()
            if m.state is not TransactionState.DEAD
            and (not wanted_ids or m.producer_id in wanted_ids)
            and (not names or m.state in wanted_states)
            and not (duration_filter_ms >= 0 and now - m.txn_start_timestamp <= duration_filter_ms)
        ]
        return ErrorCode.NONE, unknown, rows

    # --- appending ----------------------------------------------------------------------------

    async def append_transaction_to_log(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        target: TxnTransitMetadata,
        retry_on_error: Callable[[ErrorCode], bool] = lambda _: False,
    ) -> ErrorCode:
        """Write ``target`` as the id's record (acks=all), then make it the id's state. On an
        error the pending state is cleared, unless ``retry_on_error`` says the caller will try
        the same append again."""
        error, current = self.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return error
        if current is None or current.coordinator_epoch != coordinator_epoch:
            return ErrorCode.NOT_COORDINATOR
        now = self._time_ms()
        batch = encode_batch(
            [(now, encode_key(transactional_id), encode_value(target.to_log_value()), ())]
        )
        code, _ = await self._log.append(
            self.partition_for(transactional_id), batch, target.txn_timeout_ms
        )
        result = _append_error(code)
        error, current = self.get_transaction_state(transactional_id)
        if result == ErrorCode.NONE:
            if error != ErrorCode.NONE:
                return error
            if current is None or current.coordinator_epoch != coordinator_epoch:
                return ErrorCode.NOT_COORDINATOR
            metadata = current.metadata
            metadata.complete_transition_to(target)
            _log.info(
                "transaction.state_changed",
                transactional_id=transactional_id,
                producer_id=metadata.producer_id,
                producer_epoch=metadata.producer_epoch,
                state=metadata.state.kafka_name,
                partitions=sorted(str(tp) for tp in target.partitions),
                coordinator_epoch=coordinator_epoch,
            )
            return ErrorCode.NONE
        if (
            error == ErrorCode.NONE
            and current is not None
            and current.coordinator_epoch == coordinator_epoch
            and not retry_on_error(result)
        ):
            current.metadata.pending_state = None
        _log.info(
            "transaction.append_failed",
            transactional_id=transactional_id,
            state=target.state.kafka_name,
            error=result.name,
            append_error=code,
        )
        return result

    # --- loading and unloading ---------------------------------------------------------------

    def start_loading(self, partition: int, coordinator_epoch: int) -> None:
        """Forget what the partition held and answer COORDINATOR_LOAD_IN_PROGRESS for it."""
        self._cache.pop(partition, None)
        self._loading[partition] = coordinator_epoch

    async def load_partition(
        self, partition: int, coordinator_epoch: int
    ) -> list[CoordinatorEpochAndMetadata] | None:
        """Read the partition into the cache. Returns the transactions left in PrepareCommit
        or PrepareAbort, for the caller to finish; None when the load was overtaken (an
        unload, a newer epoch) or failed."""
        started = self._time_ms()
        loaded: dict[str, TransactionMetadata] = {}
        try:
            position = -1
            while self._still_loading(partition, coordinator_epoch):
                data, end = self._log.read(
                    partition, position, self.config.transaction_state_log_load_buffer_size
                )
                if not data:
                    break
                for record in decode_records(data):
                    position = record.offset + 1
                    if record.key is None:
                        _log.warning("transaction_partition.record_without_key", offset=position)
                        continue
                    transactional_id = decode_key(record.key)
                    if transactional_id is None:
                        _log.warning(
                            "transaction_partition.unknown_key_skipped",
                            partition=partition,
                            offset=record.offset,
                        )
                    elif record.value is None:
                        loaded.pop(transactional_id, None)
                    else:
                        loaded[transactional_id] = TransactionMetadata.from_log_value(
                            transactional_id, decode_value(record.value)
                        )
                # A compacted partition has batches the cleaner emptied: move past them too.
                position = max(position, _next_offset(data))
                if position >= end:
                    break
                await asyncio.sleep(0)  # let other requests in between chunks
        except Exception:
            _log.exception(
                "transaction_partition.load_failed",
                partition=partition,
                coordinator_epoch=coordinator_epoch,
            )
            if self._loading.get(partition) == coordinator_epoch:
                del self._loading[partition]
            return None
        if not self._still_loading(partition, coordinator_epoch):
            return None
        del self._loading[partition]
        self._cache[partition] = _PartitionEntry(coordinator_epoch, loaded)
        prepared = [
            CoordinatorEpochAndMetadata(coordinator_epoch, m)
            for m in loaded.values()
            if m.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)
        ]
        _log.info(
            "transaction_partition.loaded",
            partition=partition,
            coordinator_epoch=coordinator_epoch,
            transactional_ids=len(loaded),
            prepared=len(prepared),
            duration_ms=self._time_ms() - started,
        )
        return prepared

    def _still_loading(self, partition: int, coordinator_epoch: int) -> bool:
        return not self.shutting_down and self._loading.get(partition) == coordinator_epoch

    def remove_partition(self, partition: int, coordinator_epoch: int | None = None) -> bool:
        """Forget the partition's ids (an unload); True when there was something to forget."""
        loading = self._loading.get(partition)
        if loading is not None and coordinator_epoch in (None, loading):
            del self._loading[partition]
        entry = self._cache.pop(partition, None)
        return entry is not None or loading is not None

    def clear(self) -> None:
        self.shutting_down = True
        self._loading.clear()
        self._cache.clear()

    # --- expiration of transactional ids ------------------------------------------------------

    async def remove_expired_transactional_ids(self) -> None:
        """Tombstone the ids idle in Empty or Complete* for transactional.id.expiration.ms."""
        for partition, entry in list(self._cache.items()):
            now = self._time_ms()
            expired: list[tuple[TransactionMetadata, TxnTransitMetadata]] = []
            for metadata in list(entry.transactions.values()):
                if (
                    metadata.pending_state is None
                    and metadata.state in EXPIRATION_ALLOWED
                    and metadata.txn_last_update_timestamp
                    <= now - self.config.transactional_id_expiration_ms
                ):
                    expired.append((metadata, metadata.prepare_dead()))
            for start in range(0, len(expired), _TOMBSTONES_PER_BATCH):
                chunk = expired[start : start + _TOMBSTONES_PER_BATCH]
                await self._write_tombstones(partition, entry.coordinator_epoch, chunk, now)

    async def _write_tombstones(
        self,
        partition: int,
        coordinator_epoch: int,
        expired: list[tuple[TransactionMetadata, TxnTransitMetadata]],
        now: int,
    ) -> None:
        batch = encode_batch([(now, encode_key(m.transactional_id), None, ()) for m, _ in expired])
        code, _ = await self._log.append(partition, batch, self.config.request_timeout_ms)
        entry = self._cache.get(partition)
        for metadata, target in expired:
            if (
                code == ErrorCode.NONE
                and entry is not None
                and entry.coordinator_epoch == coordinator_epoch
                and metadata.pending_state is TransactionState.DEAD
                and metadata.producer_epoch == target.producer_epoch
            ):
                entry.transactions.pop(metadata.transactional_id, None)
                _log.info(
                    "transaction.state_changed",
                    transactional_id=metadata.transactional_id,
                    producer_id=metadata.producer_id,
                    producer_epoch=metadata.producer_epoch,
                    state=TransactionState.DEAD.kafka_name,
                    partitions=[],
                    reason="transactional.id.expiration.ms",
                )
            else:
                if metadata.pending_state is TransactionState.DEAD:
                    metadata.pending_state = None
                _log.warning(
                    "transaction.expiration_failed",
                    transactional_id=metadata.transactional_id,
                    error=_append_error(code).name,
                )


def _next_offset(data: bytes) -> int:
    """The offset after the last whole batch in ``data`` (-1 when there is none)."""
    last = -1
    for _, header in iter_batch_headers(data):
        last = header.next_offset
    return last
