"""``import spark_jobs.auto`` registers both formats with the active session."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


class _Recorder:
    def __init__(self) -> None:
        self.registered: list[str] = []

    def register(self, source: Any) -> None:
        self.registered.append(source.name())


class _Session:
    def __init__(self) -> None:
        self.dataSource = _Recorder()


def test_importing_auto_registers_with_the_active_session(monkeypatch: pytest.MonkeyPatch) -> None:
    session = _Session()
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: session))
    sys.modules.pop("minikafka.spark.auto", None)
    importlib.import_module("minikafka.spark.auto")
    assert sorted(session.dataSource.registered) == ["minikafka", "minikafka-segments"]


def test_importing_auto_without_a_session_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    sys.modules.pop("minikafka.spark.auto", None)
    importlib.import_module("minikafka.spark.auto")
