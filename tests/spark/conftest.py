"""Spark tests: one local SparkSession and one live one-broker cluster for the whole session.

    def test_x(spark: SparkSession, cluster: Cluster, topic_factory) -> None:
        topic = topic_factory(partitions=3)            # a fresh topic on the shared cluster
        cluster.bootstrap_servers                     # for option("bootstrap.servers", ...)

Spark's Python workers run this interpreter (PYSPARK_PYTHON = sys.executable): the venv's,
with pyarrow and this checkout. Without Java or pyspark the tests are skipped, except under
CI=true where that is a failure. The ZooKeeper server is the integration suite's fixture.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from kazoo.client import KazooClient

from minikafka.client.admin import NewTopic
from tests.integration.cluster import Cluster
from tests.integration.conftest import zookeeper_server
from tests.integration.zookeeper import ZooKeeperServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["cluster", "require_spark", "spark", "topic_factory", "zookeeper_server"]

pytestmark = pytest.mark.spark

TopicFactory = Callable[..., str]


def _running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


# The test modules import spark_jobs, which imports pyspark: without it they cannot even be
# collected. Skip them then, except under CI=true, where the import error fails the run.
if importlib.util.find_spec("pyspark") is None and not _running_in_ci():
    collect_ignore_glob = ["test_*.py"]


def _missing(reason: str) -> None:
    if _running_in_ci():
        pytest.fail(f"CI=true and Spark cannot run: {reason}", pytrace=False)
    pytest.skip(f"Spark cannot run: {reason}")


def require_spark() -> None:
    """Skip the test without pyspark or Java (fail it under CI=true)."""
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        _missing(str(exc))
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _missing("no java on PATH and no JAVA_HOME")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    require_spark()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only, not the host's address
    from pyspark.sql import SparkSession

    import minikafka.spark as spark_jobs

    session = (
        SparkSession.builder.master("local[2]")
        .appName("minikafka-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    spark_jobs.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """One broker (fast to start; the source's logic does not depend on replication)."""
    chroot = f"/spark-{uuid.uuid4().hex}"
    root = KazooClient(hosts=zookeeper_server.connect_string, timeout=10.0)
    root.start(timeout=10.0)
    try:
        root.create(chroot)
    finally:
        root.stop()
        root.close()
    path: Path = tmp_path_factory.mktemp("spark-cluster")
    live = Cluster(
        zookeeper_server.connect_string + chroot,
        path,
        n_brokers=1,
        overrides={
            "offsets.topic.num.partitions": "3",
            "replica.high.watermark.checkpoint.interval.ms": "200",
            "log.retention.check.interval.ms": "500",
        },
    )
    live.start_all()
    live.wait_until_serving()
    yield live
    live.close()


@pytest.fixture
def topic_factory(cluster: Cluster) -> TopicFactory:
    def make(partitions: int = 1, configs: dict[str, str] | None = None) -> str:
        name = f"t-{uuid.uuid4().hex[:10]}"
        with cluster.admin() as admin:
            admin.create_topics([NewTopic(name, partitions, 1, configs=configs or {})])
        cluster.wait_for(
            lambda: all(cluster.leader(name, p) >= 0 for p in range(partitions)),
            what=f"leaders for {name}",
        )
        return name

    return make
