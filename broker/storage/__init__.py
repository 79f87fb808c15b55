"""Storage engine: partition logs made of segments with sparse indexes, as Kafka lays them out.

Layers, each in its own module (byte and text layouts in each module's docstring):

    log_manager.LogManager   the broker's log dirs: loading, creation, checkpoints, retention pass
    log.Log                  one partition: append, read, truncate, roll, flush, retention, recovery
    cleaner.LogCleaner       compaction: the latest record per key, Kafka's log cleaner
    segment.LogSegment       one .log file plus its .index and .timeindex
    index.OffsetIndex/TimeIndex  the two sparse indexes
    epoch_cache.LeaderEpochFileCache  leader-epoch-checkpoint
    checkpoints              Kafka's text checkpoint files
    config.LogConfig         the storage keys of server.properties and topic configs

Nothing here imports grpc, kazoo, replication, server or controller code.
"""

from minikafka.broker.storage.checkpoints import OffsetCheckpointFile
from minikafka.broker.storage.cleaner import CleanerConfig, LogCleaner
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.epoch_cache import EpochEntry, LeaderEpochFileCache
from minikafka.broker.storage.index import CorruptIndexError, OffsetIndex, TimeIndex
from minikafka.broker.storage.log import (
    FetchDataInfo,
    Log,
    LogAppendInfo,
    TimestampAndOffset,
    UnexpectedAppendOffsetError,
)
from minikafka.broker.storage.log_manager import LogManager
from minikafka.broker.storage.segment import LogSegment

__all__ = [
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
