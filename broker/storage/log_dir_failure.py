"""Kafka's LogDirFailureChannel (KIP-112): where an I/O error on a log dir is reported.

Whatever touches a log dir's files (appends, rolls, truncations, flushes, the checkpoint
writers, the follower's fetcher) and gets an ``OSError`` -- a full disk (ENOSPC), a failing
disk (EIO), a read-only remount -- reports it here with the log dir it happened in::

    channel = LogDirFailureChannel()
    channel.add_listener(lambda log_dir: ...)          # the broker: stop serving the dir
    try:
        log.append_as_leader(data, epoch)
    except Exception as exc:
        if channel.maybe_add_offline_log_dir(log_dir, exc, "error appending to topic-0"):
            answer = KafkaStorageError(...)          # to the client, never UNKNOWN_SERVER_ERROR

The first report of a dir marks it offline for good (until the broker restarts), writes one
``log_dir.offline`` error line and calls the listeners once with the dir; later reports of
the same dir are only counted, so a dir that keeps failing does not flood the log. What going
offline means for the partitions there (KAFKA_STORAGE_ERROR to clients, the controller told
through ``/log_dir_event_notification``, the broker halted when no dir is left) is the
listeners' business: storage knows neither replication nor ZooKeeper.

Thread-safe: reports come from the broker's loop and from worker threads (checkpoint writes,
the log cleaner). Listeners run on the reporting thread and must only hand the dir over (the
broker's listener hops onto its loop with ``call_soon_threadsafe``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import structlog

__all__ = ["LogDirFailureChannel", "io_error_of"]

_log = structlog.get_logger(__name__)

LogDirListener = Callable[[Path], None]


def io_error_of(exc: BaseException) -> OSError | None:
    """The ``OSError`` behind ``exc`` (itself, or a cause in its ``raise ... from`` chain):
    what makes an error a log dir failure rather than a refusal or a bug."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError) and not isinstance(current, FileNotFoundError):
            return current
        seen.add(id(current))
        current = current.__cause__
    return None


class LogDirFailureChannel:
    """The set of offline log dirs of one broker, and who to tell when one goes offline."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offline: dict[Path, str] = {}
        self._reports: dict[Path, int] = {}
        self._listeners: list[LogDirListener] = []

    def add_listener(self, listener: LogDirListener) -> None:
        """Call ``listener(log_dir)`` once per dir that goes offline (on the reporting thread)."""
        with self._lock:
            self._listeners.append(listener)

    def maybe_add_offline_log_dir(
        self, log_dir: str | Path, exc: BaseException, context: str = ""
    ) -> bool:
        """Mark ``log_dir`` offline if ``exc`` is an I/O error; True when it is one (the dir
        is offline now, whether this report or an earlier one took it offline)."""
        error = io_error_of(exc)
        if error is None:
            return False
        path = Path(log_dir).absolute()
        with self._lock:
            self._reports[path] = self._reports.get(path, 0) + 1
            if path in self._offline:
                return True
            message = f"{context}: {error}" if context else str(error)
            self._offline[path] = message
            listeners = list(self._listeners)
        _log.error(
            "log_dir.offline",
            log_dir=str(path),
            errno=error.errno,
            error=error.strerror or str(error),
            context=context,
        )
        for listener in listeners:
            listener(path)
        return True

    def is_offline(self, log_dir: str | Path) -> bool:
        with self._lock:
            return Path(log_dir).absolute() in self._offline

    @property
    def offline_log_dirs(self) -> dict[Path, str]:
        """Each offline dir with the error that took it offline."""
        with self._lock:
            return dict(self._offline)

    def reports(self, log_dir: str | Path) -> int:
        """How many I/O errors were reported for ``log_dir`` (the first one included)."""
        with self._lock:
            return self._reports.get(Path(log_dir).absolute(), 0)
