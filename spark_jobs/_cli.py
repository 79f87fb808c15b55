"""What every job's command line shares: --bootstrap-server, --topic, --master, a Spark
session for the run, errors as one line on stderr, and Ctrl-C that stops a stream cleanly."""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

import minikafka.spark as spark_jobs
from minikafka.spark.options import SourceOptions
from minikafka.spark.planner import OffsetsClient

__all__ = [
    "await_query",
    "base_parser",
    "fail",
    "format_table",
    "require_topics",
    "run_job",
    "task_error",
]


def base_parser(description: str, *, topic_required: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--bootstrap-server",
        required=True,
        help="host:port[,host:port...] of minikafka brokers",
    )
    parser.add_argument("--topic", required=topic_required, help="the topic to analyse")
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master URL, e.g. spark://host:7077 (default: spark-submit's --master, "
        "else local[*])",
    )
    return parser


def require_topics(bootstrap: str, topics: Sequence[str]) -> None:
    """Raise UNKNOWN_TOPIC_OR_PARTITION, as the source would, before Spark starts (seconds
    sooner, and without Spark's log lines around the error)."""
    with OffsetsClient(bootstrap) as client:
        client.topic_partitions(
            SourceOptions(bootstrap, subscribe=tuple(topics)), require_existing=True
        )


def await_query(
    spark: SparkSession,
    query: StreamingQuery,
    stop: threading.Event,
    poll_s: int = 1,
    drain_s: float = 30.0,
) -> bool:
    """Wait until the streaming ``query`` ends, or ``stop`` is set (Ctrl-C, see run_job); then
    stop the query. True when ``stop`` ended it.

    The query is stopped between two micro-batches when one ends within ``drain_s``: stopped
    in the middle of one, Spark kills its tasks and logs the aborted write with pages of Java
    stack traces (the checkpoint is safe either way). Spark's warnings about the jobs it
    cancels on the way are expected, so only errors are logged from then on."""
    while not stop.is_set():
        if query.awaitTermination(poll_s):
            return False
    deadline = time.monotonic() + drain_s
    while query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.1)
    spark.sparkContext.setLogLevel("ERROR")
    query.stop()
    return True


def _set_on_sigint(stop: threading.Event) -> Callable[[int, FrameType | None], None]:
    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():  # a second Ctrl-C: the stop hangs, give up as Python would
            raise KeyboardInterrupt
        stop.set()

    return on_sigint


def fail(error: Exception | str) -> int:
    """One line on stderr (a message that spans lines, as gRPC's do, is joined); the job's exit
    status."""
    print("Error: " + " ".join(str(error).split()), file=sys.stderr)
    return 1


# The last line of a task's traceback when the task raised one of the client's KafkaErrors.
_TASK_KAFKA_ERROR = re.compile(r"^minikafka\.proto\.errors\.\w+: (.+)$", re.MULTILINE)


def task_error(error: PySparkException) -> str | None:
    """The message of the KafkaError a Spark task raised (a batch that does not decode, an
    error a broker answered), out of the exception Spark wraps it in with the worker's
    traceback; None when a task failed some other way (that one is raised as it is)."""
    found = _TASK_KAFKA_ERROR.findall(str(error))
    return found[-1] if found else None


def run_job(
    app_name: str,
    master: str | None,
    job: Callable[[SparkSession], None],
    *,
    stop: threading.Event | None = None,
) -> int:
    """Run ``job`` on a Spark session of its own (``spark_jobs.session``), stopped afterwards;
    the job's exit status. A KafkaError a Spark task raised is one line on stderr (status 1);
    any other failure is raised as it is.

    ``stop`` (a streaming job's, for ``await_query``): Ctrl-C sets it rather than raising.
    PySpark's own SIGINT handler cancels the jobs through py4j and raises KeyboardInterrupt
    inside whatever py4j call the main thread is in, which leaves py4j's connection halfway
    through an answer: the run ends in some forty lines of py4j tracebacks. So SIGINT is held
    back while the session starts (PySpark installs its handler then), and from then on only
    sets ``stop``; a second Ctrl-C raises KeyboardInterrupt, for a stop that hangs."""
    if stop is None:
        spark = spark_jobs.session(app_name, master)
        previous = None
    else:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            spark = spark_jobs.session(app_name, master)
        finally:
            previous = signal.signal(signal.SIGINT, _set_on_sigint(stop))
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # delivers a held one
    try:
        job(spark)
    except PySparkException as exc:
        message = task_error(exc)
        if message is None:
            raise
        return fail(message)
    finally:
        spark.stop()
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return 0


def format_table(title: str, df: DataFrame, limit: int = 1000) -> str:
    """A DataFrame as a fixed-width text table under ``title`` (Kafka tools' look)."""
    rows = df.limit(limit).collect()
    columns = df.columns
    cells = [[("" if v is None else str(v)) for v in row] for row in rows]
    return _table(title, columns, cells)


def _table(title: str, columns: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    widths = [len(c) for c in columns]
    for row in cells:
        widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]
    lines = [title, "  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines.extend("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells)
    return "\n".join(line.rstrip() for line in lines)
