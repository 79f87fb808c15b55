"""DescribeLogDirs and AlterReplicaLogDirs (KIP-113) on plain values, for both front doors.

    api = LogDirApi(replica_manager, auth)
    answer = api.describe_log_dirs(None, session=session)        # every partition
    errors = api.alter_replica_log_dirs({TopicPartition("t", 0): "/data/b"}, session=session)

DescribeLogDirs answers every dir of ``log.dirs``, as Kafka's ReplicaManager.describeLogDirs:
an offline dir with KAFKA_STORAGE_ERROR and nothing else; an online one with the size of its
volume (total and usable bytes, ``statvfs``) and, per topic with a log there, the logs of the
partitions asked for: size, offset lag (the current log: max(HW - LEO, 0); a future log: how far
it is behind the current one) and whether it is a future log. A topic with logs in the dir but
none of the partitions asked for is listed with no partitions, as Kafka does. It needs Describe
on the Cluster; refused, the answer is CLUSTER_AUTHORIZATION_FAILED and no dirs.

AlterReplicaLogDirs is the replica manager's (broker/replication/alter_log_dirs.py) per
partition; without Alter on the Cluster every partition is CLUSTER_AUTHORIZATION_FAILED.

Runs on the broker's event loop.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from minikafka.broker.replication.alter_log_dirs import LogDirPartition, ReplicaAlterLogDirsManager
from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import ANONYMOUS, Session
from minikafka.broker.server.core.authorization import AuthHelper
from minikafka.broker.storage.log_manager import LogManager
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = ["LogDirApi", "LogDirDescription", "LogDirsAnswer", "LogDirsSource"]

_NO_SESSION = Session(ANONYMOUS, "")


class LogDirsSource(Protocol):
    """The part of the ReplicaManager this uses (the ReplicaManager satisfies it)."""

    @property
    def log_manager(self) -> LogManager: ...

    @property
    def alter_log_dirs(self) -> ReplicaAlterLogDirsManager: ...


@dataclass(frozen=True)
class LogDirDescription:
    log_dir: str  # absolute
    error_code: ErrorCode
    partitions: tuple[LogDirPartition, ...] = ()
    topics: tuple[str, ...] = ()  # every topic with a log in the dir (Kafka lists them all)
    total_bytes: int = -1
    usable_bytes: int = -1


@dataclass(frozen=True)
class LogDirsAnswer:
    error_code: ErrorCode
    log_dirs: tuple[LogDirDescription, ...] = ()


def _volume(log_dir: Path) -> tuple[int, int]:
    """(total, usable) bytes of the volume, as Java's FileStore getTotalSpace/getUsableSpace."""
    stat = os.statvfs(log_dir)
    return stat.f_blocks * stat.f_frsize, stat.f_bavail * stat.f_frsize


class LogDirApi:
    """See the module docstring."""

    def __init__(self, replicas: LogDirsSource, auth: AuthHelper | None = None) -> None:
        self._replicas = replicas
        self._auth = auth or AuthHelper()

    def describe_log_dirs(
        self,
        partitions: Collection[TopicPartition] | None,
        *,
        session: Session = _NO_SESSION,
    ) -> LogDirsAnswer:
        """``partitions`` None: every partition with a log here."""
        if not self._auth.allows(session, "DescribeLogDirs", ResourceType.CLUSTER):
            return LogDirsAnswer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        manager = self._replicas.log_manager
        wanted = None if partitions is None else frozenset(partitions)
        results = []
        for log_dir in manager.log_dirs:
            if manager.failure_channel.is_offline(log_dir):
                results.append(LogDirDescription(str(log_dir), ErrorCode.KAFKA_STORAGE_ERROR))
                continue
            try:
                total, usable = _volume(log_dir)
            except OSError:
                total = usable = -1
            described = self._replicas.alter_log_dirs.describe_log_dir(
                log_dir, lambda tp: wanted is None or tp in wanted
            )
            topics = {
                tp.topic
                for tp in manager.logs
                if manager.log_dir_of(tp.topic, tp.partition) == log_dir
            } | {tp.topic for tp in manager.future_logs if manager.future_log_dir_of(tp) == log_dir}
            results.append(
                LogDirDescription(
                    str(log_dir),
                    ErrorCode.NONE,
                    tuple(described),
                    tuple(sorted(topics)),
                    total,
                    usable,
                )
            )
        return LogDirsAnswer(ErrorCode.NONE, tuple(results))

    def alter_replica_log_dirs(
        self, destinations: Mapping[TopicPartition, str], *, session: Session = _NO_SESSION
    ) -> dict[TopicPartition, ErrorCode]:
        """Each partition's error (NONE: moving, moved, or where it was asked to be)."""
        if not self._auth.allows(session, "AlterReplicaLogDirs", ResourceType.CLUSTER):
            return {tp: ErrorCode.CLUSTER_AUTHORIZATION_FAILED for tp in destinations}
        return self._replicas.alter_log_dirs.alter_replica_log_dirs(destinations)
