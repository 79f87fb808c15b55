"""The fetcher's half of an incremental fetch session (KIP-227), Kafka's FetchSessionHandler.

A follower fetching from one leader keeps one handler. Each round it hands ``build`` every
partition it wants fetched now, with the fetch state it would send (``FetchPartition``); the
handler says what goes on the wire:

* no session yet (or after an error): a full fetch with session epoch INITIAL (0), naming every
  partition; the answer's session id opens the session (0: the leader keeps none, so the next
  fetch is full again);
* in a session: session id and the next epoch, the partitions added since the last request or
  whose fetch state changed (``to_send``), and the ones no longer fetched (``to_forget``).

``handle_response`` checks the answer against the session (a full answer carries every
partition asked, an incremental one only session partitions) and moves to the next epoch; a
session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH), an answer that does not
fit, or a failed RPC (``handle_error``) makes the next fetch a full one that opens a new session.
A partition the fetcher stops fetching for a while (a back-off, a truncation) is forgotten and
sent again in full when it comes back, as Kafka's fetcher does.

Not thread-safe: the fetcher's task on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
        self._session: dict[TopicPartition, FetchPartition] = {}

    @property
    def session_id(self) -> int:
        return self.next_metadata.session_id

    def build(self, wanted: Mapping[TopicPartition, FetchPartition]) -> FetchRequestData:
        metadata = self.next_metadata
        if metadata.is_full:
            self._session = dict(wanted)
            return FetchRequestData(metadata, list(wanted.values()), [], len(wanted))
        to_send = [
            fp
            for tp, fp in wanted.items()
            if self._session.get(tp) != fp  # added, or its fetch state changed
        ]
        to_forget = [tp for tp in self._session if tp not in wanted]
        self._session = dict(wanted)
        return FetchRequestData(metadata, to_send, to_forget, len(wanted))

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
