"""The fetcher's half of an incremental fetch session (KIP-227), Kafka's FetchSessionHandler.

A follower fetching from one leader keeps one handler. The fetcher tells it what changed, as it
changes: ``update(tp, fp)`` when a partition is to be fetched with a new fetch state
(``FetchPartition``: added, a new fetch offset, epochs or log start offset), ``remove(tp)`` when
it is no longer fetched. ``build`` then says what goes on the wire:

* no session yet (or after an error): a full fetch with session epoch INITIAL (0), naming every
  partition fetched; the answer's session id opens the session (0: the leader keeps none, so the
  next fetch is full again);
* in a session: session id and the next epoch, the partitions updated since the last request
  whose fetch state differs from what the session holds (``to_send``), and the removed ones the
  session holds (``to_forget``).

Kafka's Builder is handed every partition each round and diffs them against the session; here
the fetcher hands over only the changes, so an incremental fetch costs the partitions that
changed, not the partitions fetched (an idle round builds nothing).

``handle_response`` checks the answer against the session (a full answer carries every
partition asked, an incremental one only session partitions) and moves to the next epoch; a
session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH), an answer that does not
fit, or a failed RPC (``handle_error``) makes the next fetch a full one that opens a new session.
A partition the fetcher stops fetching for a while (a back-off, a truncation) is removed, so
forgotten, and sent again in full when it comes back, as Kafka's fetcher does.

Not thread-safe: the fetcher's task on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from minikafka.broker.replication.fetch_session import INVALID_SESSION_ID, FetchMetadata
from minikafka.broker.replication.requests import FetchPartition
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = ["FetchRequestData", "FetchSessionHandler"]


class FetchRequestData(NamedTuple):
    """One fetch request's session part."""

    metadata: FetchMetadata
    to_send: list[FetchPartition]
    to_forget: list[TopicPartition]
    session_partitions: int  # the partitions the leader reads for this fetch


class FetchSessionHandler:
    """Session state toward one leader (module docstring)."""

    def __init__(self) -> None:
        self.next_metadata = FetchMetadata.initial()
        # The partitions fetched, as of the last request built: the leader's session holds
        # these once that request is answered.
        self._session: dict[TopicPartition, FetchPartition] = {}
        # Changes since: the new fetch state, or None for a partition no longer fetched.
        self._pending: dict[TopicPartition, FetchPartition | None] = {}

    @property
    def session_id(self) -> int:
        return self.next_metadata.session_id

    def update(self, tp: TopicPartition, fp: FetchPartition) -> None:
        """``tp`` is fetched with ``fp`` from the next request on."""
        self._pending[tp] = fp

    def remove(self, tp: TopicPartition) -> None:
        """``tp`` is no longer fetched."""
        self._pending[tp] = None

    def build(self) -> FetchRequestData:
        metadata = self.next_metadata
        pending, self._pending = self._pending, {}
        session = self._session
        to_send: list[FetchPartition] = []
        to_forget: list[TopicPartition] = []
        for tp, fp in pending.items():
            if fp is None:
                if session.pop(tp, None) is not None:
                    to_forget.append(tp)
            elif session.get(tp) != fp:  # added, or its fetch state changed
                session[tp] = fp
                to_send.append(fp)
        if metadata.is_full:
            return FetchRequestData(metadata, list(session.values()), [], len(session))
        return FetchRequestData(metadata, to_send, to_forget, len(session))

    def handle_response(
        self, error_code: int, session_id: int, partitions: Iterable[TopicPartition]
    ) -> bool:
        """Whether the answer may be used; either way, the metadata of the next fetch is set."""
        metadata = self.next_metadata
        if error_code != ErrorCode.NONE:
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.next_metadata = FetchMetadata.initial()
            else:
                self.next_metadata = metadata.next_close_existing()
            return False
        answered = set(partitions)
        extra = not answered <= self._session.keys()
        if metadata.is_full:
            if extra or answered != self._session.keys():  # a full answer names every one
                self.next_metadata = FetchMetadata.initial()
                return False
            if session_id == INVALID_SESSION_ID:
                self.next_metadata = FetchMetadata.initial()
            else:
                self.next_metadata = FetchMetadata.new_incremental(session_id)
            return True
        if extra:
            self.next_metadata = metadata.next_close_existing()
            return False
        if session_id == INVALID_SESSION_ID:
            # The leader closed the session (it forgot its last partition).
            self.next_metadata = FetchMetadata.initial()
        else:
            self.next_metadata = metadata.next_incremental()
        return True

    def handle_error(self) -> None:
        """The fetch failed on the way: close the session and open a new one."""
        self.next_metadata = self.next_metadata.next_close_existing()
