"""Delayed operations: requests parked until a partition's high watermark or log end offset
moves (Kafka's purgatory), as futures on the broker's event loop.

An acks=all produce waits on the HW of the partitions it appended to; a consumer's long-poll
fetch waits on their HW too; a follower's long-poll fetch waits on their LEO; a DeleteRecords
waits on their low watermark (the followers' log start offsets, learned from their fetches); a
fetch in an incremental fetch session waits on its session (``fetch_session_key``), notified
when any partition of the session moves (the purgatory's ``on_notify`` listener sees every key
notified: the ReplicaManager marks the partition changed in its sessions there).
Whoever moves an offset calls ``notify`` with its key and every future parked under that key
completes; the woken operation re-checks its condition (``complete_when``) and parks again if it
still cannot finish. Nothing polls: between two moves a waiting request costs nothing.

An operation over many partitions (an acks=all produce to a thousand of them) instead watches
each key once for its whole wait (``watch``): ``notify`` hands it the key that moved, and it
re-checks only that partition. Re-parking a future under every key and re-checking every
partition after each wake-up made such a produce cost O(partitions) per wake-up.

    purgatory = Purgatory()
    result = await complete_when(check, [high_watermark_key(tp)], purgatory, deadline)
    ...
    purgatory.notify(high_watermark_key(tp))   # after the HW of tp moved

    purgatory.watch(high_watermark_key(tp), operation)   # operation.on_notify(key) per move
    purgatory.unwatch(high_watermark_key(tp), operation)

Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterable
from typing import NamedTuple, Protocol, TypeVar

from minikafka.proto.common import TopicPartition

__all__ = [
    "FetchSessionKey",
    "KeyWatcher",
    "Purgatory",
    "WatchKey",
    "complete_when",
    "fetch_session_key",
    "high_watermark_key",
    "log_end_offset_key",
    "low_watermark_key",
]

T = TypeVar("T")


class WatchKey(NamedTuple):
    topic_partition: TopicPartition
    offset: str  # "hw", "leo" or "lw"


def high_watermark_key(tp: TopicPartition) -> WatchKey:
    return WatchKey(tp, "hw")


def log_end_offset_key(tp: TopicPartition) -> WatchKey:
    return WatchKey(tp, "leo")


def low_watermark_key(tp: TopicPartition) -> WatchKey:
    """Notified when a log start offset moves: a follower's at this leader, or the log's own."""
    return WatchKey(tp, "lw")


class FetchSessionKey(NamedTuple):
    session_id: int


def fetch_session_key(session_id: int) -> FetchSessionKey:
    """Notified when a partition of incremental fetch session ``session_id`` has news."""
    return FetchSessionKey(session_id)


class KeyWatcher(Protocol):
    """An operation that watches keys until it unwatches them (``Purgatory.watch``)."""

    def on_notify(self, key: Hashable) -> None:
        """``key`` moved. Runs inside ``notify``: it must not raise, and may ``unwatch``."""
        ...


class Purgatory:
    """Futures parked under keys, completed by ``notify``; watchers told of their keys."""

    def __init__(self, on_notify: Callable[[Hashable], None] | None = None) -> None:
        self._watchers: dict[Hashable, set[asyncio.Future[bool]]] = {}
        self._key_watchers: dict[Hashable, set[KeyWatcher]] = {}
        # Told of every key notified, parked futures or not (fetch sessions track changes so).
        self._on_notify = on_notify

    def __len__(self) -> int:
        """Parked futures and watchers (one watching several keys counts once per key)."""
        return sum(len(futures) for futures in self._watchers.values()) + sum(
            len(watchers) for watchers in self._key_watchers.values()
        )

    def watch(self, key: Hashable, watcher: KeyWatcher) -> None:
        """Tell ``watcher`` of every ``notify(key)`` until ``unwatch``."""
        watchers = self._key_watchers.get(key)
        if watchers is None:
            self._key_watchers[key] = {watcher}
        else:
            watchers.add(watcher)

    def unwatch(self, key: Hashable, watcher: KeyWatcher) -> None:
        watchers = self._key_watchers.get(key)
        if watchers is not None:
            watchers.discard(watcher)
            if not watchers:
                del self._key_watchers[key]

    async def wait(self, keys: Iterable[Hashable], timeout_s: float) -> bool:
        """Park until one of ``keys`` is notified (True) or ``timeout_s`` passes (False).

        The future is awaited directly, its deadline a timer that completes it with False, so
        the waiter runs in the loop's next turn after ``notify``; ``asyncio.wait_for(shield())``
        ran it two turns later, each behind all the other callbacks of a busy broker, and an
        acks=all produce waits here up to three times on its way (the followers' fetches, the
        produce, the consumer's fetch).
        """
        keys = list(keys)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        for key in keys:
            self._watchers.setdefault(key, set()).add(future)
        deadline = loop.call_later(max(timeout_s, 0.0), _complete, future, False)
        try:
            return await future
        finally:
            deadline.cancel()
            for key in keys:
                watchers = self._watchers.get(key)
                if watchers is not None:
                    watchers.discard(future)
                    if not watchers:
                        del self._watchers[key]

    def notify(self, key: Hashable) -> None:
        """Wake everything parked under ``key``."""
        if self._on_notify is not None:
            self._on_notify(key)
        key_watchers = self._key_watchers.get(key)
        if key_watchers:
            for watcher in tuple(key_watchers):  # each may unwatch itself
                watcher.on_notify(key)
        watchers = self._watchers.pop(key, None)
        if not watchers:
            return
        for future in watchers:
            _complete(future, True)

    def notify_all(self) -> None:
        """Wake everything (shutdown)."""
        for key in dict.fromkeys([*self._watchers, *self._key_watchers]):
            self.notify(key)


def _complete(future: asyncio.Future[bool], notified: bool) -> None:
    if not future.done():
        future.set_result(notified)


async def complete_when(
    check: Callable[[], T | None],
    keys: Iterable[Hashable],
    purgatory: Purgatory,
    deadline: float,
) -> T | None:
    """Kafka's DelayedOperation: ``check()`` now and after every wake-up on ``keys``.

    Returns the first non-None result of ``check``, or None once the loop's clock passes
    ``deadline`` (``loop.time()`` seconds).
    """
    keys = list(keys)
    loop = asyncio.get_running_loop()
    while True:
        result = check()
        if result is not None:
            return result
        remaining = deadline - loop.time()
        if remaining <= 0:
            return None
        await purgatory.wait(keys, remaining)
