"""AlterReplicaLogDirs (34) and DescribeLogDirs (35) on the Kafka door, every served version
through kio's writer and reader, against a fake LogDirApi."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import SimpleNamespace

import pytest

from minikafka.broker.replication.alter_log_dirs import LogDirPartition
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core.log_dirs import LogDirDescription, LogDirsAnswer
from minikafka.broker.server.kafka.handlers.log_dirs import (
    alter_replica_log_dirs,
    describe_log_dirs,
)
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.unit.server.kafka.test_api_versions import answer, request


class FakeLogDirs:
    def __init__(self, refused: bool = False) -> None:
        self.refused = refused
        self.asked: list[Collection[TopicPartition] | None] = []
        self.moves: list[Mapping[TopicPartition, str]] = []

    def describe_log_dirs(
        self, partitions: Collection[TopicPartition] | None, *, session: Session
    ) -> LogDirsAnswer:
        self.asked.append(partitions)
        if self.refused:
            return LogDirsAnswer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return LogDirsAnswer(
            ErrorCode.NONE,
            (
                LogDirDescription(
                    "/data/a",
                    ErrorCode.NONE,
                    (LogDirPartition("t", 0, 120, 0, False),),
                    ("t", "u"),
                    1000,
                    400,
                ),
                LogDirDescription("/data/b", ErrorCode.KAFKA_STORAGE_ERROR),
            ),
        )

    def alter_replica_log_dirs(
        self, destinations: Mapping[TopicPartition, str], *, session: Session
    ) -> dict[TopicPartition, ErrorCode]:
        self.moves.append(dict(destinations))
        return {
            tp: ErrorCode.NONE if path == "/data/b" else ErrorCode.LOG_DIR_NOT_FOUND
            for tp, path in destinations.items()
        }


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_log_dirs_every_version(version: int) -> None:
    fake = FakeLogDirs()
    got = answer(
        describe_log_dirs,
        request(35, version, {"topics": [{"topic": "t", "partitions": [0, 1]}]}),
        SimpleNamespace(log_dirs=fake),
    )
    assert fake.asked == [[TopicPartition("t", 0), TopicPartition("t", 1)]]
    a, b = got.results
    assert (a.log_dir, a.error_code, b.log_dir, b.error_code) == (
        "/data/a",
        ErrorCode.NONE,
        "/data/b",
        ErrorCode.KAFKA_STORAGE_ERROR,
    )
    topics = {t.name: t.partitions for t in a.topics}
    assert set(topics) == {"t", "u"} and topics["u"] == ()
    (p,) = topics["t"]
    assert (p.partition_index, p.partition_size, p.offset_lag, p.is_future_key) == (
        0,
        120,
        0,
        False,
    )
    if version >= 4:
        assert (a.total_bytes, a.usable_bytes) == (1000, 400)


def test_describe_all_and_refused() -> None:
    fake = FakeLogDirs(refused=True)
    got = answer(
        describe_log_dirs, request(35, 4, {"topics": None}), SimpleNamespace(log_dirs=fake)
    )
    assert fake.asked == [None]
    assert got.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and got.results == ()


@pytest.mark.parametrize("version", [1, 2])
def test_alter_replica_log_dirs_every_version(version: int) -> None:
    fake = FakeLogDirs()
    got = answer(
        alter_replica_log_dirs,
        request(
            34,
            version,
            {
                "dirs": [
                    {"path": "/data/b", "topics": [{"name": "t", "partitions": [0, 1]}]},
                    {"path": "/nowhere", "topics": [{"name": "u", "partitions": [3]}]},
                ]
            },
        ),
        SimpleNamespace(log_dirs=fake),
    )
    assert fake.moves == [
        {
            TopicPartition("t", 0): "/data/b",
            TopicPartition("t", 1): "/data/b",
            TopicPartition("u", 3): "/nowhere",
        }
    ]
    results = {
        (t.topic_name, p.partition_index): p.error_code for t in got.results for p in t.partitions
    }
    assert results == {
        ("t", 0): ErrorCode.NONE,
        ("t", 1): ErrorCode.NONE,
        ("u", 3): ErrorCode.LOG_DIR_NOT_FOUND,
    }
