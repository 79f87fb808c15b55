"""Executor-side reading of one offset range through the minikafka client.

    for batch in read_range(OffsetRange("orders", 0, 100, 5000), settings):
        ...                                         # pyarrow.RecordBatch in the Kafka schema

A group-less Consumer is assigned the one partition and sought to ``from_offset``; fetches go
to the leader and stop at the high watermark, so only committed records are read. The range
ends at ``until_offset`` (exclusive). Offsets that retention deleted before they were read make
the fetch fail with OFFSET_OUT_OF_RANGE: with failOnDataLoss that is an error (Spark's message
names the lost offsets), without it the task skips to the log start offset.

A task owns its Consumer for the task's lifetime; nothing here is shared between threads.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from minikafka.client._log import event_logger
from minikafka.client.consumer.consumer import Consumer
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import OffsetOutOfRangeError
from minikafka.spark.planner import OffsetRange
from minikafka.spark.schema import RowBuffer

__all__ = ["DataLossError", "ReadSettings", "read_range"]

_log = event_logger(__name__)

_ROWS_PER_BATCH = 50_000


class DataLossError(RuntimeError):
    """Planned offsets are gone (retention, a deleted topic) and failOnDataLoss is true."""


@dataclass(frozen=True)
class ReadSettings:
    bootstrap_servers: str
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = 120_000
    isolation_level: str = "read_uncommitted"  # read_committed: aborted records are skipped


def data_loss_message(what: str) -> str:
    return (
        f"{what}. Some data may have been lost because they are not available in minikafka "
        "any more; either the data was aged out by retention or the topic may have been "
        'deleted before all the data in the topic was processed. Set "failOnDataLoss" to '
        '"false" if you do not want the query to fail on such cases.'
    )


def read_range(offset_range: OffsetRange, settings: ReadSettings) -> Iterator[pa.RecordBatch]:
    """The records of ``offset_range`` as Arrow batches of up to 50,000 rows."""
    if offset_range.size == 0:
        return
    tp = TopicPartition(offset_range.topic, offset_range.partition)
    until = offset_range.until_offset
    rows = RowBuffer(tp.topic, tp.partition, settings.include_headers)
    consumer = Consumer(
        bootstrap_servers=settings.bootstrap_servers,
        auto_offset_reset="none",
        enable_auto_commit=False,
        fetch_max_wait_ms=200,
        max_partition_fetch_bytes=8 * 1024 * 1024,
        max_poll_records=100_000,
        client_id="minikafka-spark",
        isolation_level=settings.isolation_level,
    )
    try:
        consumer.assign([tp])
        consumer.seek(tp, offset_range.from_offset)
        position = offset_range.from_offset
        last_progress = time.monotonic()
        while position < until:
            try:
                polled = consumer.poll(timeout_ms=500)
            except OffsetOutOfRangeError:
                position = _after_data_loss(consumer, tp, position, until, settings)
                continue
            records = polled.get(tp, [])
            if not records:
                # The consumer moves past batches a log cleaner emptied (compacted topics).
                position = max(position, consumer.position(tp))
                if position >= until:
                    break
                if time.monotonic() - last_progress > settings.poll_timeout_ms / 1000:
                    raise TimeoutError(
                        f"no records of {tp} from offset {position} within "
                        f"kafkaConsumer.pollTimeoutMs ({settings.poll_timeout_ms} ms); "
                        f"the range ends at {until}"
                    )
                continue
            last_progress = time.monotonic()
            for r in records:
                if r.offset >= until:
                    break
                rows.append(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers)
            # a compacted log may skip offsets: the next offset to read follows the last record
            position = records[-1].offset + 1
            if len(rows) >= _ROWS_PER_BATCH:
                yield rows.flush()
        if len(rows):
            yield rows.flush()
    finally:
        consumer.close()


def _after_data_loss(
    consumer: Consumer, tp: TopicPartition, position: int, until: int, settings: ReadSettings
) -> int:
    """Where to go on after OFFSET_OUT_OF_RANGE at ``position``: the log start offset."""
    start = consumer.beginning_offsets([tp])[tp]
    if start <= position:
        # not retention: the leader has fewer records than planned (an unclean election)
        end = consumer.end_offsets([tp])[tp]
        lost = f"Offsets [{max(end, position)}, {until}) of {tp} are beyond the log end {end}"
        if settings.fail_on_data_loss:
            raise DataLossError(data_loss_message(lost))
        _log.warning("spark.data_loss", topic=tp.topic, partition=tp.partition, skipped=lost)
        return until
    lost = f"Offsets [{position}, {min(start, until)}) of {tp} are gone (log start {start})"
    if settings.fail_on_data_loss:
        raise DataLossError(data_loss_message(lost))
    _log.warning(
        "spark.data_loss",
        topic=tp.topic,
        partition=tp.partition,
        from_offset=position,
        log_start_offset=start,
    )
    if start >= until:
        return until
    consumer.seek(tp, start)
    return start
