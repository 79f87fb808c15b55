"""Import this module to register the formats with the active SparkSession:

    spark = SparkSession.builder.getOrCreate()
    import minikafka.spark.auto  # noqa: F401  -> format("minikafka"), format("minikafka-segments")

Handy in notebooks and ``spark-submit`` scripts that receive a session already made. Without an
active session the import does nothing; call ``spark_jobs.register(spark)`` later.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from minikafka.spark import register

__all__: list[str] = []

_active = SparkSession.getActiveSession()
if _active is not None:
    register(_active)
