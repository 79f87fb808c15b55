"""Hop tracing: when a produce's records reached each step of replication, in every broker, to
find where an acks=all produce and a consumer's read spend their time (``bench/hop_trace.py``
reads the traces; docs/benchmarks.md shows what it found).

Off unless the environment variable ``MINIKAFKA_HOP_TRACE`` names a directory when the broker
starts; then every event is a line appended to ``<dir>/hops-<pid>.tsv``::

    monotonic_ns <TAB> broker_id <TAB> event <TAB> topic <TAB> partition <TAB> offset <TAB> peer

``monotonic_ns`` is CLOCK_MONOTONIC, one clock for every process of the machine, so lines of
different brokers compare. Only every ``MINIKAFKA_HOP_TRACE_EVERY``-th offset (default 1000) is
traced: an event covers the offsets ``[first, end)`` it moved past, and writes one line for each
traced offset among them, so a trace costs a comparison per event and a line per thousand
records. The events, in the order one record meets them (``peer``: the other broker, -1 when
none or a consumer):

==================  ========  ====================================================================
event               broker    the moment
==================  ========  ====================================================================
append_begin        leader    a produce's batches begin to be appended (stamped after, with the
                              offsets the append gave)
appended            leader    the append is done (LEO moved past them)
fetch_answered      leader    a Fetch answer holding them is ready (``peer`` the follower's id, -1
                              for a consumer); the connection writes it next
follower_appended   follower  the follower appended them (``peer`` the leader)
follower_leo        leader    a follower's next fetch reported its LEO past them (``peer``)
hw                  leader    the high watermark moved past them
produce_answered    leader    the produce that appended them is answered (acks=all: the HW passed)
==================  ========  ====================================================================

Thread-safe enough for its job: lines are written with one ``write`` each to a file opened for
appending, from the broker's event loop.
"""

from __future__ import annotations

import os
import struct
import time

from minikafka.broker.storage.segment import FileRecords
from minikafka.proto.records import iter_batch_headers

__all__ = ["TRACE", "HopTrace", "records_end", "set_broker_id"]

ENV_DIR = "MINIKAFKA_HOP_TRACE"
ENV_EVERY = "MINIKAFKA_HOP_TRACE_EVERY"

# RecordBatch v2: baseOffset int64 at 0, batchLength int32 at 8 (bytes after it), and
# lastOffsetDelta int32 at 23.
_BATCH_PREFIX = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LOG_OVERHEAD = 12


class HopTrace:
    """The trace file of one broker process (module docstring)."""

    def __init__(self, directory: str, every: int = 1000, broker_id: int = -1) -> None:
        os.makedirs(directory, exist_ok=True)
        self.every = max(every, 1)
        self.broker_id = broker_id
        path = os.path.join(directory, f"hops-{os.getpid()}.tsv")
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def offsets(
        self,
        event: str,
        topic: str,
        partition: int,
        first: int,
        end: int,
        peer: int = -1,
        *,
        at_ns: int = 0,
    ) -> None:
        """``event`` moved ``topic``-``partition`` past the offsets ``[first, end)`` (now, or
        at ``at_ns``)."""
        every = self.every
        traced = -(-first // every) * every  # the first traced offset >= first
        if traced >= end:
            return
        now = at_ns or time.monotonic_ns()
        lines = []
        while traced < end:
            lines.append(
                f"{now}\t{self.broker_id}\t{event}\t{topic}\t{partition}\t{traced}\t{peer}\n"
            )
            traced += every
        try:
            os.write(self._fd, "".join(lines).encode())
        except OSError:  # a full disk, say: tracing stops, the broker goes on
            _stop()

    def appended(self, topic: str, partition: int, first: int, end: int, began_ns: int) -> None:
        """A leader's append of ``[first, end)`` that began at ``began_ns``: ``append_begin``
        stamped then and ``appended`` now."""
        self.offsets("append_begin", topic, partition, first, end, at_ns=began_ns)
        self.offsets("appended", topic, partition, first, end)

    def close(self) -> None:
        os.close(self._fd)


def _from_environment() -> HopTrace | None:
    directory = os.environ.get(ENV_DIR)
    if not directory:
        return None
    every = os.environ.get(ENV_EVERY, "")
    try:
        return HopTrace(directory, int(every) if every.isdigit() else 1000)
    except OSError:  # a directory it cannot write: no tracing rather than no broker
        return None


def _stop() -> None:
    global TRACE
    TRACE = None


# The process's tracer, or None (tracing off): callers test it before computing an event's
# offsets, so an untraced broker pays one comparison per event.
TRACE: HopTrace | None = _from_environment()


def set_broker_id(broker_id: int) -> None:
    """Names the broker in this process's trace lines (the broker calls it once it knows)."""
    if TRACE is not None:
        TRACE.broker_id = broker_id


def records_end(records: bytes | bytearray | memoryview | FileRecords) -> int:
    """The offset after the last record of whole v2 batches (-1 when there are none): read from
    the batch headers, in the file for ``FileRecords`` (a few bytes per batch)."""
    if isinstance(records, FileRecords):
        return _file_records_end(records)
    end = -1
    for _, header in iter_batch_headers(records):
        end = header.base_offset + header.last_offset_delta + 1
    return end


def _file_records_end(records: FileRecords) -> int:
    end = -1
    position, limit = records.position, records.position + records.size
    while position + _BATCH_PREFIX.size <= limit and records.fd >= 0:
        prefix = os.pread(records.fd, _BATCH_PREFIX.size, position)
        delta = os.pread(records.fd, _LAST_OFFSET_DELTA.size, position + 23)
        if len(prefix) < _BATCH_PREFIX.size or len(delta) < _LAST_OFFSET_DELTA.size:
            break
        base_offset, length = _BATCH_PREFIX.unpack(prefix)
        end = base_offset + _LAST_OFFSET_DELTA.unpack(delta)[0] + 1
        position += _LOG_OVERHEAD + length
    return end
