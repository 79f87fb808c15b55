"""A job on a Spark standalone cluster: a master and one worker started from the venv's pyspark.

    standalone.master_url        spark://127.0.0.1:<port>; bound to 127.0.0.1 only
    standalone.work_dir          the worker's dir: app-<id>/<executor id>/stderr per executor

The job is submitted with ``spark-submit --master``, which ``spark_jobs.session()`` must honour
(it forced local[*] once). Its tasks must run in the worker's executor, whose Python workers are
this interpreter (PYSPARK_PYTHON): the path every worker needs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from minikafka.client.producer.producer import Producer
from tests.integration.cluster import Cluster
from tests.spark.conftest import TopicFactory, require_spark

pytestmark = pytest.mark.spark


@dataclass(frozen=True)
class Standalone:
    master_url: str
    work_dir: Path
    env: dict[str, str]
    spark_home: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _stop(process: subprocess.Popen[Any]) -> None:
    """SIGTERM to the process group (the JVM and what it started: executors, Python workers),
    SIGKILL if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # executors the worker left behind


def _alive_workers(webui_port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{webui_port}/json/", timeout=2) as answer:
        state = json.load(answer)
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[Standalone]:
    require_spark()
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    conf_dir = tmp_path / "conf"  # empty: no spark-defaults.conf of the machine's
    conf_dir.mkdir()
    env = dict(
        os.environ,
        SPARK_HOME=str(spark_home),
        SPARK_CONF_DIR=str(conf_dir),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(tmp_path / "local"),
        PYSPARK_PYTHON=sys.executable,
    )
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYSPARK_GATEWAY_SECRET", None)
    spark_class = str(spark_home / "bin" / "spark-class")
    port, webui = _free_port(), _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    work_dir = tmp_path / "work"
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, argv: list[str]) -> None:
        with (tmp_path / f"{name}.out").open("wb") as out:
            processes.append(
                subprocess.Popen(
                    argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            )

    try:
        start(
            "master",
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(webui)],
        )  # fmt: skip
        start(
            "worker",
            [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
             "--port", str(_free_port()), "--webui-port", str(_free_port()), "--cores", "1",
             "--memory", "1g", "--work-dir", str(work_dir), master_url],
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                if _alive_workers(webui) == 1:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                logs = "\n".join(
                    (tmp_path / f"{n}.out").read_text(errors="replace")[-3000:]
                    for n in ("master", "worker")
                )
                pytest.fail(f"the standalone master and worker did not come up:\n{logs}")
            time.sleep(0.5)
        yield Standalone(master_url, work_dir, env, spark_home)
    finally:
        for process in reversed(processes):
            _stop(process)


def test_topic_stats_runs_on_a_standalone_cluster(
    standalone: Standalone, cluster: Cluster, topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = topic_factory(partitions=2)
    with Producer(cluster.bootstrap_servers) as producer:
        futures = [producer.send(topic, b"v", key=f"k{i % 4}".encode()) for i in range(60)]
        producer.flush()
        for future in futures:
            future.result(timeout=30)
    job = tmp_path / "job.py"  # what a spark-submit script looks like
    job.write_text(
        "import sys\nfrom minikafka.spark import topic_stats\nsys.exit(topic_stats.main())\n"
    )
    argv = [
        str(standalone.spark_home / "bin" / "spark-submit"),
        "--master", standalone.master_url,
        "--conf", "spark.executor.memory=512m",
        "--conf", "spark.cores.max=1",
        str(job), "--bootstrap-server", cluster.bootstrap_servers, "--topic", topic,
    ]  # fmt: skip
    driver = subprocess.Popen(
        argv,
        env=standalone.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = driver.communicate(timeout=150)
    finally:
        _stop(driver)
    assert driver.returncode == 0, err[-3000:]
    assert "Total records: 60" in out

    executor_logs = [
        log.read_text(errors="replace") for log in standalone.work_dir.glob("app-*/*/stderr")
    ]
    assert executor_logs, f"no executor ran on the worker (driver stderr:\n{err[-3000:]})"
    assert any("Running task" in log for log in executor_logs), executor_logs
