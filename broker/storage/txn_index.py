"""A segment's ``<base>.txnindex``: the aborted transactions whose ABORT marker is in it
(Kafka's TransactionIndex).

A read_committed fetch answers up to the last stable offset with the aborted transactions
that overlap the answer, so that the consumer drops their records; this index is where they are
found without reading the log. One entry per transaction aborted by a marker in the segment,
in the order of the markers, 34 bytes each, big-endian, no header::

    offset  size  field
         0     2  version             int16, 0
         2     8  producer_id         int64
        10     8  first_offset        int64   the transaction's first offset
        18     8  last_offset         int64   the offset of its ABORT marker
        26     8  last_stable_offset  int64   the LSO once it completed: the first offset of
                                              the oldest transaction still open then (of
                                              another producer), else last_offset + 1

Last offsets only grow from entry to entry. The file exists only once an entry is written, as
Kafka's (a segment with no abort has none). Entries are written as markers are appended (no
fsync: ``flush``), truncated with the segment, rebuilt by the partition when recovery re-reads
a segment (the entries depend on producer state the storage layer does not keep), and carried
by the log cleaner into a cleaned segment for the aborted transactions whose marker it keeps.

``last_stable_offset`` lets a search stop: once an entry's LSO is at or above the fetch's upper
bound, every transaction that could overlap the fetch has been seen (``collect``).

Not thread-safe: owned by its segment (the log's owner); the cleaner writes its own file.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from minikafka.broker.storage.index import CorruptIndexError

__all__ = [
    "ENTRY_SIZE",
    "TXN_INDEX_SUFFIX",
    "AbortedTxn",
    "TransactionIndex",
    "TxnIndexSearchResult",
    "decode_entries",
    "encode_entry",
]

TXN_INDEX_SUFFIX = ".txnindex"
TXN_INDEX_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class AbortedTxn(NamedTuple):
    """One ``.txnindex`` entry (its version, always 0, is not kept)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TxnIndexSearchResult(NamedTuple):
    aborted: list[AbortedTxn]
    is_complete: bool  # an entry's LSO reached the upper bound: later segments need no search


def encode_entry(txn: AbortedTxn) -> bytes:
    return _ENTRY.pack(TXN_INDEX_VERSION, *txn)


def decode_entries(data: bytes, source: object = "<txnindex>") -> list[AbortedTxn]:
    """The entries of a file's bytes; CorruptIndexError for a size that is not a multiple of
    34 or an entry of another version (Kafka's sanity check and its read)."""
    if len(data) % ENTRY_SIZE:
        raise CorruptIndexError(
            f"transaction index {source} has size {len(data)}, not a multiple of {ENTRY_SIZE}"
        )
    entries = []
    for version, *fields in _ENTRY.iter_unpack(data):
        if version != TXN_INDEX_VERSION:
            raise CorruptIndexError(
                f"transaction index {source} has an entry of version {version}, "
                f"expected {TXN_INDEX_VERSION}"
            )
        entries.append(AbortedTxn(*fields))
    return entries


class TransactionIndex:
    """The ``.txnindex`` of the segment at ``start_offset`` (see the module docstring). The
    file is read on first use and appended to through a descriptor opened on first write."""

    def __init__(self, path: Path, start_offset: int) -> None:
        self.path = path
        self.start_offset = start_offset
        self._entries: list[AbortedTxn] | None = None
        self._fd: int | None = None

    def __repr__(self) -> str:
        return f"TransactionIndex(path={self.path})"

    @staticmethod
    def read_entries(path: Path | str) -> list[AbortedTxn]:
        """Every entry of the file at ``path`` (none when there is no file)."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        return decode_entries(data, path)

    @property
    def entries(self) -> list[AbortedTxn]:
        """Every entry, oldest first (read from the file on first use). A torn last entry (a
        crash mid-write) is cut off; a file of another version is an error."""
        if self._entries is None:
            try:
                with open(self.path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                data = b""
            whole = len(data) - len(data) % ENTRY_SIZE
            if whole != len(data):
                os.truncate(self.path, whole)
            self._entries = decode_entries(data[:whole], self.path)
        return self._entries

    @property
    def exists(self) -> bool:
        return self._fd is not None or self.path.exists()

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry at the end; its last offset must be above the last entry's (Kafka
        refuses the same: markers are appended in offset order)."""
        entries = self.entries
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise ValueError(
                f"aborted transaction {txn} does not follow the last entry of {self.path} "
                f"(last offset {entries[-1].last_offset})"
            )
        data = encode_entry(txn)
        fd = self._open()
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        entries.append(txn)

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """The aborted transactions overlapping [``fetch_offset``, ``upper_bound_offset``):
        those whose last offset is >= the fetch offset and first offset < the bound (Kafka's
        collectAbortedTxns)."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(found, True)
        return TxnIndexSearchResult(found, False)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or above ``offset`` (a truncated segment)."""
        entries = self.entries
        keep = len(entries)
        while keep and entries[keep - 1].last_offset >= offset:
            keep -= 1
        if keep == len(entries):
            return
        del entries[keep:]
        if self.path.exists():
            os.truncate(self.path, keep * ENTRY_SIZE)

    def reset(self) -> None:
        """No entry left, and no file (the partition rebuilds it)."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self._entries = []

    def replace_entries(self, entries: Iterable[AbortedTxn]) -> None:
        """Start over with ``entries`` (in order)."""
        self.reset()
        for txn in entries:
            self.append(txn)

    def flush(self, *, fsync: bool) -> None:
        if fsync and self._fd is not None:
            os.fsync(self._fd)

    def open_for_sync(self) -> int | None:
        """A descriptor of its own on the file for a background fsync, or None when there is
        no file; the caller closes it."""
        if self._fd is not None:
            return os.dup(self._fd)
        try:
            return os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def delete(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def rename_to(self, path: Path) -> bool:
        """Close and rename the file (when there is one) to ``path``; True if it existed.
        The index follows the file (Kafka's renameTo, for ``.deleted`` and the swap)."""
        self.close()
        try:
            os.rename(self.path, path)
        except FileNotFoundError:
            self.path = path
            return False
        self.path = path
        return True
