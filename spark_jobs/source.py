"""The ``minikafka`` PySpark data source: batch reads, streaming reads and the sink.

    spark_jobs.register(spark)
    df = (spark.read.format("minikafka")
          .option("bootstrap.servers", "127.0.0.1:9092").option("subscribe", "orders")
          .load())                                   # Spark's Kafka schema (spark_jobs.schema)
    stream = (spark.readStream.format("minikafka").option("bootstrap.servers", servers)
              .option("subscribe", "orders").option("maxOffsetsPerTrigger", "10000").load())

Options are Spark's Kafka source options (spark_jobs.options). The driver plans with
ListOffsets (spark_jobs.planner); each task reads one offset range through the client
(spark_jobs.reader). A streaming offset is ``{topic: {"partition": next offset}}`` (JSON keys
are strings), what Spark checkpoints; a restarted query resumes from it, so each record is
read exactly once per checkpoint. Partitions that appear while the query runs are read from
their earliest offset.

Spark pickles readers to the executors; the driver-side OffsetsClient is dropped from the
pickle and made again where needed. A reader serves one query; the driver calls it from one
thread.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from minikafka.client._log import event_logger
from minikafka.proto.common import TopicPartition
from minikafka.spark.options import (
    SourceOptions,
    SourceOptionsError,
    get_bool,
    parse_source_options,
)
from minikafka.spark.planner import (
    OffsetRange,
    OffsetsClient,
    offset_ranges,
    rate_limit,
    resolve_offsets,
    split_ranges,
)
from minikafka.spark.reader import DataLossError, ReadSettings, data_loss_message, read_range
from minikafka.spark.schema import kafka_schema
from minikafka.spark.sink import StreamWriter, Writer, sink_settings

__all__ = ["BatchReader", "MiniKafkaDataSource", "StreamReader"]

_log = event_logger(__name__)

StreamOffset = dict[str, dict[str, int]]


def _read_settings(options: SourceOptions) -> ReadSettings:
    return ReadSettings(
        options.bootstrap_servers,
        fail_on_data_loss=options.fail_on_data_loss,
        include_headers=options.include_headers,
        poll_timeout_ms=options.poll_timeout_ms,
        isolation_level=options.isolation_level,
    )


def _partitions(ranges: Sequence[OffsetRange]) -> list[InputPartition]:
    return [InputPartition(r) for r in ranges]


def _planned_range(partition: InputPartition | None) -> OffsetRange | None:
    """The range a task reads; None for the one empty task Spark runs when ``partitions()``
    planned none (an empty topic): pyspark 4 hands it ``InputPartition(None)``."""
    if partition is None:
        return None
    value: OffsetRange | None = partition.value
    return value


class MiniKafkaDataSource(DataSource):
    """Format ``minikafka``: ``spark.read``, ``spark.readStream``, ``df.write``,
    ``df.writeStream``."""

    @classmethod
    def name(cls) -> str:
        return "minikafka"

    def schema(self) -> StructType:
        return kafka_schema(get_bool(self.options, "includeHeaders", False))

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            # as Spark's Kafka sink: a topic is appended to, never replaced
            raise SourceOptionsError(
                "Save mode Overwrite not allowed for minikafka: records are appended to the "
                'topic, never replaced. Write with mode("append").'
            )
        return Writer(sink_settings(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return StreamWriter(sink_settings(self.options, schema))


class BatchReader(DataSourceReader):
    """startingOffsets (default earliest) to endingOffsets (default latest), planned once."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def plan(self) -> list[OffsetRange]:
        options = self.options
        with OffsetsClient(options.bootstrap_servers, options.isolation_level) as client:
            tps = client.topic_partitions(options, require_existing=True)
            start = resolve_offsets(
                client, tps, options.starting_offsets or "earliest", options, use_timestamps=True
            )
            end = resolve_offsets(client, tps, options.ending_offsets)
        for tp in tps:
            if end[tp] < start[tp]:
                raise ValueError(
                    f"{tp}: the starting offset {start[tp]} is after the ending offset {end[tp]}"
                )
        ranges = split_ranges(offset_ranges(start, end), options.min_partitions)
        _log.info(
            "spark.batch_planned",
            partitions=len(tps),
            tasks=len(ranges),
            records=sum(r.size for r in ranges),
        )
        return ranges

    def partitions(self) -> Sequence[InputPartition]:
        return _partitions(self.plan())

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        offset_range = _planned_range(partition)
        if offset_range is not None:
            yield from read_range(offset_range, _read_settings(self.options))


def _to_offset(offsets: Mapping[TopicPartition, int]) -> StreamOffset:
    out: StreamOffset = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def _from_offset(offset: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {
        TopicPartition(topic, int(p)): int(v)
        for topic, parts in offset.items()
        for p, v in parts.items()
    }


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of new committed records; admission control by maxOffsetsPerTrigger;
    Trigger.AvailableNow stops at the offsets that were latest when the query started."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._client: OffsetsClient | None = None
        self._target: dict[TopicPartition, int] | None = None  # Trigger.AvailableNow

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None  # gRPC channels do not travel to the executors
        return state

    @property
    def client(self) -> OffsetsClient:
        if self._client is None:
            self._client = OffsetsClient(
                self.options.bootstrap_servers, self.options.isolation_level
            )
        return self._client

    def initialOffset(self) -> StreamOffset:
        options = self.options
        tps = self.client.topic_partitions(options, require_existing=True)
        start = resolve_offsets(
            self.client, tps, options.starting_offsets or "latest", options, use_timestamps=True
        )
        _log.info("spark.stream_initial_offset", offsets=_to_offset(start))
        return _to_offset(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.client.end_offsets(self.client.topic_partitions(self.options))
        _log.info("spark.stream_available_now", target=_to_offset(self._target))

    def _latest(self) -> dict[TopicPartition, int]:
        if self._target is not None:
            return dict(self._target)
        return self.client.end_offsets(self.client.topic_partitions(self.options))

    def latestOffset(self, start: StreamOffset, limit: ReadLimit) -> StreamOffset:
        begin = _from_offset(start)
        latest = self._latest()
        new = [tp for tp in latest if tp not in begin]
        if new:
            earliest = self.client.beginning_offsets(new)
            _log.info("spark.stream_new_partitions", partitions=[str(tp) for tp in new])
            begin.update(earliest)
        gone = [tp for tp in begin if tp not in latest]
        if gone:
            message = f"partitions {sorted(map(str, gone))} are gone"
            if self.options.fail_on_data_loss:
                raise DataLossError(data_loss_message(message))
            _log.warning("spark.data_loss", skipped=message)
        end = dict(latest)
        for tp, offset in latest.items():
            if offset < begin[tp]:
                message = f"{tp}: the latest offset {offset} is below {begin[tp]}"
                if self.options.fail_on_data_loss:
                    raise DataLossError(data_loss_message(message))
                _log.warning("spark.data_loss", skipped=message)
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, end, limit.max_rows)
        for tp in gone:
            end[tp] = begin[tp]  # kept, so the checkpoint remembers where it stopped
        return _to_offset(end)

    def reportLatestOffset(self) -> StreamOffset:
        return _to_offset(self._latest())

    def partitions(self, start: StreamOffset, end: StreamOffset) -> Sequence[InputPartition]:
        begin = _from_offset(start)
        finish = _from_offset(end)
        new = [tp for tp in finish if tp not in begin]
        if new:
            begin.update(self.client.beginning_offsets(new))
        # a partition whose latest offset fell below its start (data loss, already reported
        # when failOnDataLoss) starts again at the latest offset
        begin = {tp: min(offset, finish.get(tp, offset)) for tp, offset in begin.items()}
        return _partitions(split_ranges(offset_ranges(begin, finish), self.options.min_partitions))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        offset_range = _planned_range(partition)
        if offset_range is not None:
            yield from read_range(offset_range, _read_settings(self.options))

    def commit(self, end: StreamOffset) -> None:
        pass  # nothing to acknowledge: progress lives in Spark's checkpoint, as for Kafka

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        _leave_the_source_runner_quietly()


# PySpark 4's runner of a Python streaming source (the process that calls this reader for the
# driver) has no way out of its command loop but the JVM closing its socket when the query
# stops: it then calls ``stop`` and prints the EOFError, and a second traceback for the error
# report it cannot send, on the job's stderr -- on every stop the runner notices before the JVM
# kills it. A Ctrl-C'd job should end in one line (spark_jobs/_cli.py), so when the reader is
# stopped in that process because its socket closed, the process ends here, as the JVM is about
# to end it anyway. Any other error (an unknown topic, say) goes on to the runner, which reports
# it to the query.
_SOURCE_RUNNER = "pyspark.sql.streaming.python_streaming_source_runner"


def _leave_the_source_runner_quietly() -> None:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    closed = isinstance(sys.exc_info()[1], (EOFError, ConnectionError))  # stop() runs in a finally
    if closed and spec is not None and spec.name == _SOURCE_RUNNER:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
