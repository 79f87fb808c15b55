"""Incremental fetch sessions on the leader (KIP-227): Kafka's FetchSession, FetchSessionCache and
FetchManager, for both front doors (the gRPC Fetch and the Kafka protocol's Fetch v7+).

A fetcher (a follower, or a consumer) names the same partitions fetch after fetch. With a
session it lists them once, in a full fetch, and after that only what changed::

    request (session_id, epoch)        meaning
    (0 or id, FINAL -1)                a full fetch outside any session (closing ``id`` if set)
    (0 or id, INITIAL 0)               a full fetch asking for a new session (closing ``id``)
    (id, n > 0)                        the n-th incremental fetch of session ``id``: its
                                       partitions list only those added or whose fetch state
                                       changed; ``forgotten`` those that leave the session

The leader keeps each session's partitions (``CachedPartition``: the fetch state last asked for
and the high watermark and log start offset last answered) and answers, in an incremental fetch,
only the partitions with news: records, a new high watermark or log start offset, an error, or a
diverging epoch (``CachedPartition.maybe_update_response_data``). A partition answered with an
error keeps -1 as its cached high watermark, so it is answered again once the error is gone.

Kafka reads every partition of a session on each fetch, as if all were listed. Here a fetch reads
only the partitions it lists and those of the session marked *changed*: the answer is the same,
at a cost that follows the work. ``FetchSessionCache.partition_changed(tp)`` (the ReplicaManager
calls it whenever a partition's HW, LEO, log start offset or leadership moves: every purgatory
notification) marks ``tp`` changed in each session holding it and names the sessions, whose
parked fetch (``fetch_session_key``) it wakes. A read leaves a partition changed while reading
it again could answer something: records not sent yet (the fetch offset is below the LEO for a
follower, the HW for a consumer), an error, a diverging epoch, or news not yet answered (the
fetch that read it was refused, or has not answered yet). A partition neither listed nor
changed would read as it read last time, which was answered: nothing. A change between a read
and the park that follows it is not lost: the mark stays until a read clears it, and the read
and the park run without yielding the loop.

A follower's fetch offset is its LEO, and each of its fetches tells the leader whether it is
caught up (partition.py). A partition it does not list, held by the session before the fetch,
has the fetch offset it had: the leader takes it so (``FetchContext.previous_fetch_ms``,
``FetchSessionCache.follower_fetch_time``) instead of visiting every session partition on every
fetch. A partition the fetch adds was not fetched at the session's previous fetch
(``FetchContext.added``). Kafka retries an ISR expansion it refused (a write in flight) at the
follower's next fetch, which visits every partition; here ``FetchSessionCache.revisit(tp)``
(the ReplicaManager calls it when an ISR write ends) puts ``tp`` in the first read of the next
fetch of each follower's session holding it -- the read that records the follower's fetch state
-- and only that read takes it out: a parked fetch's re-reads, which record nothing, leave it.
A full fetch being read when an ISR write ends has no session yet to mark: the session it
makes reads all its partitions at its next fetch.

A session's epoch starts at 1 and goes up by one per incremental fetch (after ``2**31 - 1`` it
wraps to 1). An unknown session id is FETCH_SESSION_ID_NOT_FOUND (70), a wrong epoch
INVALID_FETCH_SESSION_EPOCH (71); on either the fetcher opens a new session with a full fetch.
An incremental fetch that forgets the session's last partition closes the session (its answer
carries session id 0).

The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions (one slot each,
whatever its size). When it is full, a new session may evict (``FetchSessionCache.try_evict``):

* the least recently used session, if it has been idle for more than
  ``min.incremental.fetch.session.eviction.ms`` (stale); otherwise
* the least valuable session old enough to be evicted, if the new one is at least as valuable:
  a follower's session (privileged) is worth more than a consumer's, then more partitions are
  worth more. A consumer's session may be evicted by a follower's at any age; a session older
  than the eviction time may be evicted by any. Neither is a session younger than that by a
  consumer's.

When no session can be evicted, the full fetch is still answered, with session id 0: the fetcher
keeps sending full fetches, as Kafka does when its cache is full. A fetch parked on a session
that is removed (evicted, closed) no longer hears of changes: the cache's ``on_removed`` wakes
it, and it answers at once what a read of all the session's partitions finds; the fetcher's
next fetch of that session gets FETCH_SESSION_ID_NOT_FOUND.

Sessions are the fetcher's business, not the partition's: a leader change shows in the session
as an error (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH) answered for that partition until the
fetcher forgets it; partitions added to or removed from the fetcher come and go with the next
incremental fetch.

Not thread-safe: the broker's event loop only. A context is made before the fetch parks (long
poll) and answers after, so two fetches of one session can overlap; the second to answer finds
the session's epoch moved on and answers INVALID_FETCH_SESSION_EPOCH, as Kafka's does.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import structlog

from minikafka.broker.replication.delayed import fetch_session_key
from minikafka.broker.replication.requests import FetchPartition, FetchPartitionResult
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "INVALID_SESSION_ID",
    "CachedPartition",
    "FetchContext",
    "FetchManager",
    "FetchMetadata",
    "FetchSession",
    "FetchSessionCache",
    "FetchSessionResponse",
    "FetchSessionStats",
    "next_epoch",
]

INVALID_SESSION_ID = 0  # no session
INITIAL_EPOCH = 0  # a full fetch that asks for a new session
FINAL_EPOCH = -1  # a full fetch outside any session
_MAX_EPOCH = 2**31 - 1

_log = structlog.get_logger(__name__)


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: FINAL stays FINAL, and the largest int32 wraps to 1 (0 is
    INITIAL, never an incremental epoch)."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == _MAX_EPOCH:
        return 1
    return epoch + 1


class FetchMetadata(NamedTuple):
    """A fetch request's (session id, epoch), KIP-227's FetchMetadata."""

    session_id: int
    epoch: int

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    @classmethod
    def initial(cls) -> FetchMetadata:
        return cls(INVALID_SESSION_ID, INITIAL_EPOCH)

    @classmethod
    def new_incremental(cls, session_id: int) -> FetchMetadata:
        return cls(session_id, next_epoch(INITIAL_EPOCH))

    def next_incremental(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, next_epoch(self.epoch))

    def next_close_existing(self) -> FetchMetadata:
        """A full fetch that closes this session and asks for a new one."""
        return FetchMetadata(self.session_id, INITIAL_EPOCH)


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: the fetch state it was last asked with, and what was last
    answered for it (-1: nothing yet, or an error since)."""

    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    fetcher_log_start_offset: int
    partition_max_bytes: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    position: int = 0  # the session's read order: lower first
    topic_id: str = ""  # the id the fetcher named the topic by ("": by name)

    @classmethod
    def of(cls, fp: FetchPartition) -> CachedPartition:
        return cls(
            fp.fetch_offset,
            fp.current_leader_epoch,
            fp.last_fetched_epoch,
            fp.log_start_offset,
            fp.partition_max_bytes,
            topic_id=fp.topic_id,
        )

    def update_request_params(self, fp: FetchPartition) -> None:
        self.fetch_offset = fp.fetch_offset
        self.current_leader_epoch = fp.current_leader_epoch
        self.last_fetched_epoch = fp.last_fetched_epoch
        self.fetcher_log_start_offset = fp.log_start_offset
        self.partition_max_bytes = fp.partition_max_bytes
        self.topic_id = fp.topic_id

    def fetch_partition(self, tp: TopicPartition) -> FetchPartition:
        return FetchPartition(
            tp.topic,
            tp.partition,
            self.fetch_offset,
            self.current_leader_epoch,
            self.last_fetched_epoch,
            self.fetcher_log_start_offset,
            self.partition_max_bytes,
            self.topic_id,
        )

    def maybe_update_response_data(self, result: FetchPartitionResult, update: bool) -> bool:
        """Whether an incremental answer must carry ``result``; with ``update``, remember what it
        tells (Kafka's CachedPartition.maybeUpdateResponseData)."""
        # A preferred read replica (KIP-392) is always answered: the consumer moves on it.
        must_respond = (
            bool(result.records)
            or result.diverging_epoch is not None
            or result.preferred_read_replica >= 0
        )
        if result.high_watermark != self.high_watermark:
            must_respond = True
            if update:
                self.high_watermark = result.high_watermark
        if result.last_stable_offset != self.last_stable_offset:
            must_respond = True
            if update:
                self.last_stable_offset = result.last_stable_offset
        if result.log_start_offset != self.log_start_offset:
            must_respond = True
            if update:
                self.log_start_offset = result.log_start_offset
        if result.error_code != ErrorCode.NONE:
            must_respond = True
            if update:
                # So the partition is answered again when the error goes away.
                self.high_watermark = -1
        return must_respond


@dataclass(eq=False)
class FetchSession:
    """One session: its partitions in the order they are read (``CachedPartition.position``),
    and those ``changed`` since they were last read and answered (module docstring). A
    partition answered with records moves to the back, so under the response size limit the
    others get their turn. ``last_used_ms`` is when its last fetch came."""

    id: int
    privileged: bool  # a follower's
    creation_ms: int
    last_used_ms: int
    epoch: int = 1
    partitions: OrderedDict[TopicPartition, CachedPartition] = field(default_factory=OrderedDict)
    replica_id: int = -1  # the follower's broker id; -1 for a consumer
    changed: set[TopicPartition] = field(default_factory=set)
    # A follower's: read at the next fetch's first read (``FetchSessionCache.revisit``).
    revisit: set[TopicPartition] = field(default_factory=set)
    removed: bool = False  # no longer in the cache: no change is marked any more

    def __post_init__(self) -> None:
        for position, cached in enumerate(self.partitions.values()):
            cached.position = position
        self._next_position = len(self.partitions)

    def __len__(self) -> int:
        return len(self.partitions)

    def move_to_back(self, tp: TopicPartition) -> None:
        self.partitions.move_to_end(tp)
        self.partitions[tp].position = self._next_position
        self._next_position += 1

    def update(
        self, requested: Sequence[FetchPartition], forgotten: Iterable[TopicPartition]
    ) -> tuple[list[TopicPartition], list[TopicPartition], list[TopicPartition]]:
        """Apply an incremental fetch: (added, updated, removed)."""
        added: list[TopicPartition] = []
        updated: list[TopicPartition] = []
        removed: list[TopicPartition] = []
        for fp in requested:
            tp = TopicPartition(fp.topic, fp.partition)
            cached = self.partitions.get(tp)
            if cached is None:
                cached = self.partitions[tp] = CachedPartition.of(fp)
                cached.position = self._next_position
                self._next_position += 1
                added.append(tp)
            else:
                cached.update_request_params(fp)
                updated.append(tp)
        for tp in forgotten:
            if self.partitions.pop(tp, None) is not None:
                self.changed.discard(tp)
                self.revisit.discard(tp)
                removed.append(tp)
        return added, updated, removed

    def fetch_partitions(self, tps: Iterable[TopicPartition] | None = None) -> list[FetchPartition]:
        """Every partition (None), or those of ``tps`` in the session, in the read order."""
        if tps is None:
            return [cached.fetch_partition(tp) for tp, cached in self.partitions.items()]
        partitions = self.partitions
        chosen = [(partitions[tp], tp) for tp in tps if tp in partitions]
        chosen.sort(key=lambda entry: entry[0].position)
        return [cached.fetch_partition(tp) for cached, tp in chosen]


class _EvictableKey(NamedTuple):
    """Ordered from least to most valuable: consumers' before followers', then by size."""

    privileged: bool
    size: int
    session_id: int


@dataclass
class FetchSessionStats:
    """Kafka's FetchSessionCache metrics (NumIncrementalFetchSessions,
    NumIncrementalFetchPartitionsCached, IncrementalFetchSessionEvictionsPerSec) plus what the
    sessions save: fetches by kind, and the partitions their requests listed and their answers
    carried (a sessionless or full fetch lists and answers every partition it reads)."""

    sessions: int = 0
    partitions_cached: int = 0
    evictions: int = 0
    full_fetches: int = 0
    incremental_fetches: int = 0
    sessionless_fetches: int = 0
    session_errors: int = 0
    partitions_requested: int = 0  # listed in requests (including forgotten ones)
    partitions_answered: int = 0  # carried in answers
    partitions_read: int = 0  # read for the answers (in a session: those listed or changed)


class FetchSessionCache:
    """At most ``max_entries`` sessions, evicted as the module docstring says."""

    def __init__(
        self,
        max_entries: int,
        eviction_ms: int,
        *,
        stats: FetchSessionStats | None = None,
        rng: random.Random | None = None,
        on_removed: Callable[[int], None] | None = None,
    ) -> None:
        """``on_removed(session_id)``: a session left the cache (its parked fetch must wake)."""
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.stats = stats or FetchSessionStats()
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}
        # Each session's size and evictability as of its last touch (Kafka's cachedSize and the
        # evictableByAll / evictableByPrivileged maps), kept in step by ``touch``.
        self._touched: dict[int, tuple[int, bool, bool]] = {}
        self._num_partitions = 0
        # The sessions holding each partition, for ``partition_changed``.
        self._by_partition: dict[TopicPartition, set[FetchSession]] = {}
        self._on_removed = on_removed
        self.revisits = 0  # calls of ``revisit``, for full fetches being read meanwhile

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    @property
    def total_partitions(self) -> int:
        return self._num_partitions

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def _new_session_id(self) -> int:
        while True:
            session_id = self._rng.randint(-(2**31), 2**31 - 1)
            if session_id != INVALID_SESSION_ID and session_id not in self._sessions:
                return session_id

    def maybe_create_session(
        self,
        now_ms: int,
        privileged: bool,
        partitions: OrderedDict[TopicPartition, CachedPartition],
        *,
        replica_id: int = -1,
        changed: Iterable[TopicPartition] = (),
        revisit: Iterable[TopicPartition] = (),
    ) -> FetchSession | None:
        """A new session holding ``partitions`` (``changed``: those to read again at its next
        fetch; ``revisit``: those its next fetch's first read visits), or None when the cache
        is full and nothing may be evicted for it."""
        if self.max_entries <= 0:
            return None
        if len(self._sessions) >= self.max_entries and not self.try_evict(
            privileged, len(partitions), now_ms
        ):
            return None
        session = FetchSession(
            self._new_session_id(),
            privileged,
            now_ms,
            now_ms,
            partitions=partitions,
            replica_id=replica_id,
            changed={tp for tp in changed if tp in partitions},
            revisit={tp for tp in revisit if tp in partitions},
        )
        self._sessions[session.id] = session
        self._index(session, session.partitions)
        self.touch(session, now_ms)
        _log.info(
            "fetch_session.created",
            session_id=session.id,
            privileged=privileged,
            partitions=len(session),
            sessions=len(self._sessions),
        )
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Mark ``session`` used now and take note of its current size."""
        old = self._touched.get(session.id)
        if old is not None:
            self._num_partitions -= old[0]
        session.last_used_ms = now_ms
        old_enough = now_ms - session.creation_ms > self.eviction_ms
        # (size, evictable by a follower's session, evictable by any session)
        self._touched[session.id] = (len(session), not session.privileged or old_enough, old_enough)
        self._num_partitions += len(session)
        self._update_stats()

    def remove(self, session_id: int, reason: str) -> FetchSession | None:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return None
        self._unindex(session, session.partitions)
        session.removed = True
        touched = self._touched.pop(session_id, None)
        if touched is not None:
            self._num_partitions -= touched[0]
        self._update_stats()
        if self._on_removed is not None:
            self._on_removed(session_id)
        _log.info(
            "fetch_session.removed",
            session_id=session_id,
            privileged=session.privileged,
            partitions=len(session),
            reason=reason,
        )
        return session

    def update_session(
        self,
        session: FetchSession,
        requested: Sequence[FetchPartition],
        forgotten: Iterable[TopicPartition],
    ) -> tuple[list[TopicPartition], list[TopicPartition], list[TopicPartition]]:
        """``session.update``, keeping the partition index in step."""
        added, updated, removed = session.update(requested, forgotten)
        self._index(session, added)
        self._unindex(session, removed)
        return added, updated, removed

    def _index(self, session: FetchSession, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self._by_partition.setdefault(tp, set()).add(session)

    def _unindex(self, session: FetchSession, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            sessions = self._by_partition.get(tp)
            if sessions is not None:
                sessions.discard(session)
                if not sessions:
                    del self._by_partition[tp]

    def partition_changed(self, tp: TopicPartition) -> list[int]:
        """Mark ``tp`` changed in every session holding it; the ids of those sessions (each
        may have a fetch parked that must look now, whether or not ``tp`` was marked)."""
        sessions = self._by_partition.get(tp)
        if not sessions:
            return []
        for session in sessions:
            session.changed.add(tp)
        return [session.id for session in sessions]

    def revisit(self, tp: TopicPartition) -> None:
        """An ISR write of ``tp`` ended: the next fetch of each follower's session holding
        ``tp`` reads it first thing, so the leader records the follower's fetch state again and
        retries an expansion refused meanwhile (module docstring)."""
        self.revisits += 1
        for session in self._by_partition.get(tp, ()):
            if session.privileged:
                session.revisit.add(tp)

    def follower_fetch_time(self, replica_id: int, tp: TopicPartition, fetch_offset: int) -> int:
        """The last fetch of follower ``replica_id`` in a session that holds ``tp`` at
        ``fetch_offset`` (-1: none): a fetch that did not list ``tp`` fetched it again at that
        offset."""
        latest = -1
        for session in self._by_partition.get(tp, ()):
            if session.replica_id != replica_id or session.last_used_ms <= latest:
                continue
            cached = session.partitions.get(tp)
            if cached is not None and cached.fetch_offset == fetch_offset:
                latest = session.last_used_ms
        return latest

    def try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Evict one session for a new one of ``size`` partitions (module docstring)."""
        if not self._sessions:
            return False
        # The least recently used (ties: the lowest id, as Kafka's LastUsedKey orders them).
        lru = min(self._sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - lru.last_used_ms > self.eviction_ms:
            self.remove(lru.id, "stale")
            self.stats.evictions += 1
            return True
        candidates = [
            _EvictableKey(self._sessions[sid].privileged, touched[0], sid)
            for sid, touched in self._touched.items()
            if (touched[1] if privileged else touched[2])
        ]
        if not candidates:
            return False
        least = min(candidates)
        if _EvictableKey(privileged, size, 0) < least:
            return False
        self.remove(least.session_id, "evicted")
        self.stats.evictions += 1
        return True

    def _update_stats(self) -> None:
        self.stats.sessions = len(self._sessions)
        self.stats.partitions_cached = self._num_partitions


class FetchSessionResponse(NamedTuple):
    """What a front door answers: a whole-request error, the session id for the next fetch,
    and the partitions to put on the wire (in the order read)."""

    error_code: int
    session_id: int
    partitions: list[FetchPartitionResult]


class FetchContext:
    """One fetch as its session sees it. The reader (the ReplicaManager) reads ``partitions``
    first; while the fetch waits (long poll) it parks on ``session_key`` (None: on each of
    ``partitions``) and reads ``rereads()`` after each wake-up; after every read it calls
    ``after_read``; ``respond`` answers. This base is the sessionless full fetch, which reads
    every partition each time."""

    session_key: Hashable | None = None
    # A follower in a session: when its previous fetch came (partitions it does not list were
    # fetched then at the offset they have), and the partitions this fetch added to the session
    # (not fetched then).
    previous_fetch_ms: int | None = None
    added: frozenset[TopicPartition] = frozenset()

    def __init__(self, partitions: Sequence[FetchPartition]) -> None:
        self.partitions = list(partitions)

    @property
    def error_code(self) -> int:
        """Non-zero: answer this and read nothing."""
        return ErrorCode.NONE

    def rereads(self) -> list[FetchPartition]:
        """What to read after a wake-up."""
        return self.partitions

    @property
    def session_removed(self) -> bool:
        """The session left the cache while the fetch waited: answer now (no change will wake
        the fetch any more)."""
        return False

    def after_read(
        self, results: Sequence[FetchPartitionResult], unsettled: Iterable[TopicPartition]
    ) -> None:
        """The results of one read; ``unsettled``: those a read now could answer again
        (records not sent yet, an error, a diverging epoch)."""

    def high_watermark_moved(self, results: Iterable[FetchPartitionResult]) -> bool:
        """Some result carries a high watermark above the one last answered to this fetcher
        (a session's follower: KIP-392's prompt propagation of the HW)."""
        return False

    def respond(self, results: Sequence[FetchPartitionResult]) -> FetchSessionResponse:
        return FetchSessionResponse(ErrorCode.NONE, INVALID_SESSION_ID, list(results))


class _SessionErrorContext(FetchContext):
    def __init__(self, error_code: ErrorCode) -> None:
        super().__init__(())
        self._error_code = error_code

    @property
    def error_code(self) -> int:
        return self._error_code

    def respond(self, results: Sequence[FetchPartitionResult]) -> FetchSessionResponse:
        return FetchSessionResponse(self._error_code, INVALID_SESSION_ID, [])


class _FullFetchContext(FetchContext):
    """A full fetch asking for a session: every partition read and answered; the session is
    made when the answer is (so a fetch that fails makes none), last used when the fetch came."""

    def __init__(
        self,
        cache: FetchSessionCache,
        partitions: Sequence[FetchPartition],
        replica_id: int,
        now_ms: int,
    ) -> None:
        super().__init__(partitions)
        self._cache = cache
        self._replica_id = replica_id
        self._now_ms = now_ms
        self._unsettled: set[TopicPartition] = set()
        self._revisits = cache.revisits

    def after_read(
        self, results: Sequence[FetchPartitionResult], unsettled: Iterable[TopicPartition]
    ) -> None:
        self._unsettled = set(unsettled)  # every partition is read each time

    def respond(self, results: Sequence[FetchPartitionResult]) -> FetchSessionResponse:
        cached: OrderedDict[TopicPartition, CachedPartition] = OrderedDict()
        for fp in self.partitions:
            cached[TopicPartition(fp.topic, fp.partition)] = CachedPartition.of(fp)
        for result in results:
            part = cached.get(TopicPartition(result.topic, result.partition))
            if part is not None:
                part.maybe_update_response_data(result, update=True)
        # An ISR write that ended while this fetch was read could not mark a session not made
        # yet: the follower's next fetch visits every partition once (rare: both are).
        revisit = cached if self._replica_id >= 0 and self._cache.revisits != self._revisits else ()
        session = self._cache.maybe_create_session(
            self._now_ms,
            self._replica_id >= 0,
            cached,
            replica_id=self._replica_id,
            changed=self._unsettled,
            revisit=revisit,
        )
        session_id = INVALID_SESSION_ID if session is None else session.id
        return FetchSessionResponse(ErrorCode.NONE, session_id, list(results))


class _IncrementalFetchContext(FetchContext):
    """Reads the partitions listed and those of the session changed; answers those with news."""

    def __init__(
        self,
        session: FetchSession,
        listed: Iterable[TopicPartition],
        added: Iterable[TopicPartition],
        previous_fetch_ms: int,
    ) -> None:
        # The first read records the follower's fetch state of what it reads: it takes the
        # partitions to revisit (re-reads after a wake-up record nothing).
        first = session.changed.union(listed, session.revisit)
        session.revisit.clear()
        super().__init__(session.fetch_partitions(first))
        self._session = session
        self._expected_epoch = session.epoch
        self.session_key = fetch_session_key(session.id)
        if session.privileged:
            self.previous_fetch_ms = previous_fetch_ms
            self.added = frozenset(added)
        self._unsettled: set[TopicPartition] = set()

    @property
    def session_removed(self) -> bool:
        return self._session.removed

    def rereads(self) -> list[FetchPartition]:
        session = self._session
        if session.removed:
            return session.fetch_partitions()  # its changes are no longer marked
        return session.fetch_partitions(session.changed)

    def after_read(
        self, results: Sequence[FetchPartitionResult], unsettled: Iterable[TopicPartition]
    ) -> None:
        session = self._session
        if session.epoch != self._expected_epoch:
            return  # another fetch answers this session: leave its marks alone
        unsettled = set(unsettled)
        for result in results:
            tp = TopicPartition(result.topic, result.partition)
            cached = session.partitions.get(tp)
            if cached is None:
                continue
            if tp in unsettled:
                self._unsettled.add(tp)
                session.changed.add(tp)
                continue
            self._unsettled.discard(tp)
            if cached.maybe_update_response_data(result, update=False):
                session.changed.add(tp)  # news, until it is answered
            else:
                session.changed.discard(tp)

    def high_watermark_moved(self, results: Iterable[FetchPartitionResult]) -> bool:
        partitions = self._session.partitions
        for result in results:
            cached = partitions.get(TopicPartition(result.topic, result.partition))
            if cached is not None and result.high_watermark > cached.high_watermark:
                return True
        return False

    def respond(self, results: Sequence[FetchPartitionResult]) -> FetchSessionResponse:
        session = self._session
        if session.epoch != self._expected_epoch:
            # Another fetch of this session was answered meanwhile.
            return FetchSessionResponse(
                ErrorCode.INVALID_FETCH_SESSION_EPOCH, INVALID_SESSION_ID, []
            )
        in_session: list[tuple[CachedPartition, TopicPartition, FetchPartitionResult]] = []
        for result in results:
            tp = TopicPartition(result.topic, result.partition)
            cached = session.partitions.get(tp)
            if cached is not None:  # else forgotten by a fetch that came while this one waited
                in_session.append((cached, tp, result))
        in_session.sort(key=lambda entry: entry[0].position)
        answered: list[FetchPartitionResult] = []
        for cached, tp, result in in_session:
            if cached.maybe_update_response_data(result, update=True):
                answered.append(result)
                if result.records:
                    session.move_to_back(tp)
            if tp not in self._unsettled:
                session.changed.discard(tp)  # answered: reading it again would say nothing
        return FetchSessionResponse(ErrorCode.NONE, session.id, answered)


class FetchManager:
    """Turns a fetch's session fields into a ``FetchContext`` (Kafka's FetchManager.newContext).

    A front door calls ``fetch`` with a ``read`` that hands the context to the ReplicaManager
    (``fetch_messages(request with context.partitions, context)``); or, in steps,
    ``new_context``, the read (unless ``context.error_code``), and ``respond``.
    """

    def __init__(self, cache: FetchSessionCache, time_ms: Callable[[], int]) -> None:
        self.cache = cache
        self.stats = cache.stats
        self._time_ms = time_ms

    def new_context(
        self,
        metadata: FetchMetadata,
        partitions: Sequence[FetchPartition],
        forgotten: Sequence[TopicPartition],
        *,
        replica_id: int,
    ) -> FetchContext:
        """``replica_id``: the follower's broker id, or a negative one for a consumer (whose
        session is not privileged)."""
        stats = self.stats
        stats.partitions_requested += len(partitions) + len(forgotten)
        if metadata.is_full:
            if metadata.session_id != INVALID_SESSION_ID:
                self.cache.remove(metadata.session_id, "closed_by_full_fetch")
            if metadata.epoch == FINAL_EPOCH:
                stats.sessionless_fetches += 1
                return FetchContext(partitions)
            stats.full_fetches += 1
            return _FullFetchContext(self.cache, partitions, replica_id, self._time_ms())
        session = self.cache.get(metadata.session_id)
        if session is None:
            stats.session_errors += 1
            return _SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != metadata.epoch:
            stats.session_errors += 1
            return _SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        added, _, removed = self.cache.update_session(session, partitions, forgotten)
        if added or removed:
            _log.debug(
                "fetch_session.updated",
                session_id=session.id,
                added=len(added),
                removed=len(removed),
                partitions=len(session),
            )
        if not session.partitions:
            self.cache.remove(session.id, "empty")
            stats.sessionless_fetches += 1
            return FetchContext(())
        previous_fetch_ms = session.last_used_ms
        self.cache.touch(session, self._time_ms())
        session.epoch = next_epoch(session.epoch)
        stats.incremental_fetches += 1
        return _IncrementalFetchContext(
            session,
            (TopicPartition(fp.topic, fp.partition) for fp in partitions),
            added,
            previous_fetch_ms,
        )

    async def fetch(
        self,
        metadata: FetchMetadata,
        partitions: Sequence[FetchPartition],
        forgotten: Sequence[TopicPartition],
        *,
        replica_id: int,
        read: Callable[[FetchContext], Awaitable[Sequence[FetchPartitionResult]]],
    ) -> FetchSessionResponse:
        """One fetch through its session: ``read`` (the ReplicaManager's fetch, long poll
        included) reads what the context says."""
        context = self.new_context(metadata, partitions, forgotten, replica_id=replica_id)
        if context.error_code != ErrorCode.NONE:
            return context.respond(())
        return self.respond(context, await read(context))

    def respond(
        self, context: FetchContext, results: Sequence[FetchPartitionResult]
    ) -> FetchSessionResponse:
        """``context.respond`` and the count of what the answer carries."""
        response = context.respond(results)
        self.stats.partitions_answered += len(response.partitions)
        return response
