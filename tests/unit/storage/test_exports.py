"""The package exports exactly the names the broker is meant to use."""

from __future__ import annotations

import broker.storage


def test_public_names() -> None:
    assert sorted(broker.storage.__all__) == [
        "CorruptIndexError",
        "EpochEntry",
        "FetchDataInfo",
        "LeaderEpochFileCache",
        "Log",
        "LogAppendInfo",
        "LogConfig",
        "LogManager",
        "LogSegment",
        "OffsetCheckpointFile",
        "OffsetIndex",
        "TimeIndex",
        "TimestampAndOffset",
        "TopicPartition",
        "UnexpectedAppendOffsetError",
    ]
    for name in broker.storage.__all__:
        assert getattr(broker.storage, name).__module__.startswith("broker.storage.")
