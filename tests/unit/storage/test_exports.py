"""The package exports exactly the names the broker is meant to use."""

from __future__ import annotations

from minikafka.broker import storage


def test_public_names() -> None:
    assert sorted(storage.__all__) == [
        "CleanerConfig",
        "CorruptIndexError",
        "EpochEntry",
        "FetchDataInfo",
        "LeaderEpochFileCache",
        "Log",
        "LogAppendInfo",
        "LogCleaner",
        "LogConfig",
        "LogManager",
        "LogSegment",
        "OffsetCheckpointFile",
        "OffsetIndex",
        "TimeIndex",
        "TimestampAndOffset",
        "UnexpectedAppendOffsetError",
    ]
    for name in storage.__all__:
        if name == "LogConfig":  # the storage's name for a topic's config, proto's TopicConfig
            assert storage.LogConfig.__module__ == "minikafka.proto.topic_config"
            continue
        assert getattr(storage, name).__module__.startswith("minikafka.broker.storage.")
