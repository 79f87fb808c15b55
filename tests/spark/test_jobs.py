"""The jobs' outputs against numbers computed independently from what the test produced."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from minikafka.client.consumer.consumer import Consumer
from minikafka.client.producer.producer import Producer
from minikafka.proto.common import TopicPartition
from minikafka.spark import consumer_lag, topic_stats, windowed_counts
from tests.integration.cluster import Cluster
from tests.spark.conftest import TopicFactory

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

MINUTE_MS = 60_000
# a minute boundary half an hour ago: old records would be deleted by retention at once
BASE_MS = (int(time.time() * 1000) - 30 * MINUTE_MS) // MINUTE_MS * MINUTE_MS


def produce_timed(
    cluster: Cluster, topic: str, records: list[tuple[bytes, bytes, int, int]]
) -> None:
    """(key, value, partition, timestamp ms) each, all acknowledged."""
    with Producer(cluster.bootstrap_servers) as producer:
        futures = [
            producer.send(topic, value, key=key, partition=p, timestamp_ms=ts)
            for key, value, p, ts in records
        ]
        producer.flush()
        for future in futures:
            future.result(timeout=30)


def test_topic_stats(
    spark: SparkSession,
    cluster: Cluster,
    topic_factory: TopicFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = topic_factory(partitions=2)
    records = [
        (f"k{i % 5}".encode() if i % 5 else b"hot", b"x" * (i % 10), i % 2, BASE_MS + i * 1000)
        for i in range(150)  # 150 s: minutes 0, 1 and 2
    ]
    produce_timed(cluster, topic, records)

    stats = topic_stats.compute(topic_stats.load(spark, cluster.bootstrap_servers, topic), top=2)
    assert stats.total_records() == 150
    per_partition = {r.partition: (r.records, r.bytes) for r in stats.per_partition.collect()}
    expected: dict[int, list[int]] = {0: [0, 0], 1: [0, 0]}
    for key, value, p, _ in records:
        expected[p][0] += 1
        expected[p][1] += len(key) + len(value)
    assert per_partition == {p: tuple(v) for p, v in expected.items()}
    minutes = [r.records for r in stats.per_minute.collect()]
    assert minutes == [60, 60, 30]
    keys = Counter(key.decode() for key, _, _, _ in records)
    assert [(r.key, r.records) for r in stats.top_keys.collect()] == keys.most_common(2)
    summary = stats.summary_row()
    assert summary["distinct_keys"] == len(keys)
    assert summary["records_per_sec"] == pytest.approx(150 / 149, abs=0.1)

    print(topic_stats.report(stats, topic))
    assert "Total records: 150" in capsys.readouterr().out


def test_consumer_lag(spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory) -> None:
    topic = topic_factory(partitions=2)
    produce_timed(cluster, topic, [(b"k", b"v", i % 2, BASE_MS + i) for i in range(40)])
    group = f"g-{topic}"
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with Consumer(
        bootstrap_servers=cluster.bootstrap_servers, group_id=group, enable_auto_commit=False
    ) as consumer:
        consumer.assign([tp0, tp1])
        consumer.commit({tp0: 5, tp1: 20})
        consumer.commit({tp0: 12})

    lag = consumer_lag.compute(spark, cluster.bootstrap_servers, group=group)
    now = {
        (r.topic, r.partition): (r.committed_offset, r.log_end_offset, r.lag)
        for r in lag.now.collect()
    }
    assert now == {(topic, 0): (12, 20, 8), (topic, 1): (20, 20, 0)}
    history = [(r.partition, r.committed_offset, r.lag) for r in lag.over_time.collect()]
    # the records were all produced before the commits: the log end then was 20 per partition
    assert sorted(history) == [(0, 5, 15), (0, 12, 8), (1, 20, 0)]


def test_windowed_counts_written_back_to_a_topic(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    source, sink = topic_factory(partitions=2), topic_factory(partitions=1)
    records = [
        (f"user-{i % 3}".encode(), b"click", i % 2, BASE_MS + (i * 7_000))  # 7 s apart
        for i in range(30)  # 210 s: four one-minute windows
    ]
    produce_timed(cluster, source, records)
    expected = Counter((ts // MINUTE_MS * MINUTE_MS, key.decode()) for key, _, _, ts in records)

    query = windowed_counts.start(
        spark,
        cluster.bootstrap_servers,
        source,
        sink,
        str(tmp_path / "checkpoint"),
        starting_offsets="earliest",
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    assert window_counts(cluster, sink) == dict(expected)


def window_counts(cluster: Cluster, sink: str) -> dict[tuple[int, str], int]:
    """The latest count per (window start, key) that windowed_counts produced to ``sink``."""
    latest: dict[tuple[int, str], int] = {}
    with Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest") as c:
        c.assign([TopicPartition(sink, 0)])
        end = c.end_offsets([TopicPartition(sink, 0)])[TopicPartition(sink, 0)]
        while c.position(TopicPartition(sink, 0)) < end:
            for batch in c.poll(500).values():
                for record in batch:
                    assert record.value is not None
                    out = json.loads(record.value)
                    assert out["window_end"] - out["window_start"] == MINUTE_MS
                    assert record.key == out["key"].encode()
                    latest[(out["window_start"], out["key"])] = out["count"]
    return latest


def test_windowed_counts_available_now_counts_the_records_already_there(
    spark: SparkSession, cluster: Cluster, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    # --available-now without --starting-offsets, as the README shows it
    source, sink = topic_factory(partitions=1), topic_factory(partitions=1)
    records = [(b"user-1", b"click", 0, BASE_MS + i * 1000) for i in range(5)]
    produce_timed(cluster, source, records)

    query = windowed_counts.start(
        spark, cluster.bootstrap_servers, source, sink, str(tmp_path / "ckpt"), available_now=True
    )
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()
    assert window_counts(cluster, sink) == {(BASE_MS, "user-1"): 5}


@pytest.mark.parametrize("job", ["topic_stats", "windowed_counts"])
def test_a_job_on_a_missing_topic_exits_with_one_line(
    cluster: Cluster, topic_factory: TopicFactory, tmp_path: Path, job: str
) -> None:
    argv = [sys.executable, "-m", f"minikafka.spark.{job}"]
    argv += ["--bootstrap-server", cluster.bootstrap_servers, "--topic", "no-such-topic"]
    if job == "windowed_counts":
        argv += ["--output-topic", topic_factory(), "--checkpoint", str(tmp_path / "ckpt")]
        argv += ["--available-now"]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "Error: UNKNOWN_TOPIC_OR_PARTITION (3): Topic no-such-topic not found."
    ]
    assert done.stdout == ""


def test_windowed_counts_names_the_command_that_creates_its_output_topic(
    cluster: Cluster, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap_servers
    argv = [sys.executable, "-m", "minikafka.spark.windowed_counts"]
    argv += ["--bootstrap-server", bootstrap, "--topic", topic_factory()]
    argv += ["--output-topic", "no-such-output", "--checkpoint", str(tmp_path / "ckpt")]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "Error: UNKNOWN_TOPIC_OR_PARTITION (3): Topic no-such-output not found. The job writes "
        "to --output-topic and does not create it; create it first: minikafka topics "
        f"--bootstrap-server {bootstrap} --create --topic no-such-output "
        "--config cleanup.policy=compact"
    ]


def test_ctrl_c_stops_a_streaming_job_with_one_line(
    cluster: Cluster, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    # Ctrl-C used to land in PySpark's own SIGINT handler, which raised KeyboardInterrupt
    # inside a py4j call: some forty lines of py4j tracebacks.
    source, sink = topic_factory(partitions=1), topic_factory(partitions=1)
    produce_timed(cluster, source, [(b"user-1", b"click", 0, BASE_MS)])
    checkpoint = tmp_path / "ckpt"
    argv = [sys.executable, "-m", "minikafka.spark.windowed_counts"]
    argv += ["--bootstrap-server", cluster.bootstrap_servers, "--topic", source]
    argv += ["--output-topic", sink, "--checkpoint", str(checkpoint)]
    argv += ["--starting-offsets", "earliest"]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    # its own process group, as a shell's foreground job: Ctrl-C signals the whole group
    job = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 240
        while not (checkpoint / "commits" / "0").exists():
            assert job.poll() is None, job.communicate()[1].decode()
            assert time.monotonic() < deadline, "no micro-batch committed in 240 s"
            time.sleep(0.5)
        os.killpg(job.pid, signal.SIGINT)
        _, err = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    lines = err.decode().splitlines()
    assert job.returncode == 0, lines[-20:]
    assert lines[-1] == f"windowed_counts stopped (Ctrl-C); {checkpoint} keeps its progress"
    noise = ("Traceback", "py4j", "Exception in thread")  # Python's, py4j's, the JVM's
    noisy = [i for i, line in enumerate(lines) if any(word in line for word in noise)]
    assert not noisy, "\n".join(lines[noisy[0] : noisy[0] + 40]) if noisy else ""


_SIGINT_IN_A_TASK = """
import os, signal, time
import minikafka.spark as spark_jobs

def interrupted(value):
    os.kill(os.getpid(), signal.SIGINT)  # a terminal's Ctrl-C reaches the workers too
    time.sleep(0.5)
    return value * 2

spark = spark_jobs.session("sigint-in-a-task", "local[1]")
try:
    print(spark.sparkContext.parallelize([21], 1).map(interrupted).collect())
finally:
    spark.stop()
"""


def test_a_python_worker_finishes_its_task_through_a_ctrl_c(tmp_path: Path) -> None:
    """The jobs' local sessions run PySpark's daemon with SIGINT ignored in the workers
    (spark_jobs/_quiet_daemon.py): Ctrl-C, which a terminal sends to the whole process group,
    does not kill a busy worker with a KeyboardInterrupt traceback (pyspark.daemon puts the
    default handler back in each worker); the driver alone decides how the job stops."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run(
        [sys.executable, "-c", _SIGINT_IN_A_TASK],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[42]"
    assert "KeyboardInterrupt" not in done.stderr
