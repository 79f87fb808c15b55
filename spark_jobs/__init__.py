"""PySpark on minikafka: the ``minikafka`` data source, the offline ``minikafka-segments``
reader and analytics jobs.

    from pyspark.sql import SparkSession
    import minikafka.spark as spark_jobs
    spark = SparkSession.builder.master("local[*]").getOrCreate()
    spark_jobs.register(spark)                   # formats "minikafka" and "minikafka-segments"
    # or, with a session already active:  import spark_jobs.auto
    df = (spark.read.format("minikafka").option("bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders").load())
    offline = spark.read.format("minikafka-segments").option("path", "/var/lib/minikafka/logs")
              .option("subscribe", "orders").load()

Jobs: ``python -m minikafka.spark.topic_stats``, ``python -m minikafka.spark.consumer_lag``,
``python -m minikafka.spark.windowed_counts`` (each ``--bootstrap-server … --topic …``).

Spark's Python workers must run an interpreter that has this package and pyarrow:
``session(...)`` sets PYSPARK_PYTHON to the current one before starting Spark.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["FORMAT", "SEGMENTS_FORMAT", "register", "session"]

# The jobs' events go through Python's logging as the client's do (client/_log.py): silent
# unless the application configures logging; the job CLIs print their own errors.
logging.getLogger(__name__).addHandler(logging.NullHandler())

FORMAT = "minikafka"
SEGMENTS_FORMAT = "minikafka-segments"


def register(spark: SparkSession) -> None:
    """Register both formats with ``spark`` (once per session is enough)."""
    from minikafka.spark.segments import SegmentsDataSource
    from minikafka.spark.source import MiniKafkaDataSource

    spark.dataSource.register(MiniKafkaDataSource)
    spark.dataSource.register(SegmentsDataSource)


def session(app_name: str, master: str | None = None) -> SparkSession:
    """A SparkSession with both formats registered. Its master is ``master`` when given, else
    the one this process was launched with (``spark-submit --master``, spark-defaults.conf),
    else local[*]."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # spark-submit (and the pyspark shell) start the JVM first and hand it to this process
    launched_by_spark = "PYSPARK_GATEWAY_PORT" in os.environ
    local = (master or "local").startswith("local") and not launched_by_spark
    if local:
        # Spark binds its driver to the host name's address otherwise, a non-loopback interface.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if local:
        # Python workers that a terminal's Ctrl-C leaves alone (spark_jobs/_quiet_daemon.py);
        # local mode's workers run this Python, which has minikafka.
        builder = builder.config("spark.python.daemon.module", "minikafka.spark._quiet_daemon")
    spark = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    register(spark)
    return spark
