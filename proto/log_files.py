"""The names and text files of a broker's log dir, parsed once for the broker (broker/storage,
producer snapshots, dump-log) and for the offline readers (spark_jobs/segments.py), which may
import only ``proto``.

Pure functions on names and text: no I/O, no Kafka errors. A malformed input raises
``ValueError`` with a message naming ``source`` (the file) and the line; the broker turns it into
KafkaStorageError.

    parse_partition_dir("my-topic-3")              # ("my-topic", 3); None for "x-delete"
    log_file_name(42, LOG_SUFFIX)                  # "00000000000000000042.log"
    parse_log_file_name("00000000000000000042.index.swap")   # LogFileName(42, ".index.swap")
    parse_offset_checkpoint("0\\n1\\nt 0 15\\n")     # {("t", 0): 15}

Checkpoint framing (Kafka's): ``<version>\\n<count>\\n`` then one entry per line; the entry
format is the file kind's (``<topic> <partition> <offset>`` for offset checkpoints).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

__all__ = [
    "CHECKPOINT_VERSION",
    "CLEANER_OFFSET_CHECKPOINT",
    "INDEX_SUFFIX",
    "LOG_START_OFFSET_CHECKPOINT",
    "LOG_SUFFIX",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "TIME_INDEX_SUFFIX",
    "LogFileName",
    "log_file_name",
    "parse_checkpoint",
    "parse_log_file_name",
    "parse_offset_checkpoint",
    "parse_offset_entry",
    "parse_partition_dir",
]

CHECKPOINT_VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"  # the log cleaner's first dirty offsets

# A segment's files: <base offset, 20 digits> then one of these.
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"

T = TypeVar("T")


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``my-topic-3`` -> (my-topic, 3): the partition follows the last ``-``; None for anything
    else (``-delete``, ``-future`` and other directories)."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not _is_decimal(partition):
        return None
    return topic, int(partition)


class LogFileName(NamedTuple):
    """A partition directory's file named by an offset: ``<offset><suffix>``."""

    offset: int
    suffix: str  # from the first ".": ".log", ".index.swap", ".snapshot", ...


def log_file_name(offset: int, suffix: str = "") -> str:
    """The name of the file for ``offset`` (a segment's base offset, a producer snapshot's
    offset): the offset in 20 zero-padded digits, so that names sort as offsets do, then
    ``suffix``.

    >>> log_file_name(42, LOG_SUFFIX)
    '00000000000000000042.log'
    """
    return f"{offset:020d}{suffix}"


def parse_log_file_name(name: str) -> LogFileName | None:
    """The offset and the suffix of a file ``log_file_name`` named (a leftover's suffix
    included); None for a name that is not decimal digits then a suffix from a ``.``.

    >>> parse_log_file_name("00000000000000000042.log.deleted")
    LogFileName(offset=42, suffix='.log.deleted')
    >>> parse_log_file_name("leader-epoch-checkpoint") is None
    True
    """
    stem, dot, rest = name.partition(".")
    if not dot or not _is_decimal(stem):
        return None
    return LogFileName(int(stem), dot + rest)


def _is_decimal(text: str) -> bool:
    # str.isdigit alone passes other scripts' digits ("²", "٣"): not a name Kafka writes.
    return text.isascii() and text.isdigit()


def parse_checkpoint(
    text: str,
    parse_line: Callable[[str], T | None],
    *,
    version: int = CHECKPOINT_VERSION,
    source: str = "<checkpoint>",
) -> list[T]:
    """The entries of a checkpoint file's text; empty text (or a version alone) holds none.
    ``parse_line`` returns None (or raises ValueError) for a line it cannot read."""
    lines = text.splitlines()
    if not lines:
        return []
    found = _number(lines, 0, "version", source)
    if found != version:
        raise ValueError(
            f"checkpoint file {source} has version {found}; only version {version} is understood"
        )
    if len(lines) < 2:
        return []
    expected = _number(lines, 1, "entry count", source)
    entries: list[T] = []
    for number, line in enumerate(lines[2:], start=3):
        try:
            entry = parse_line(line)
        except ValueError:
            entry = None
        if entry is None:
            raise ValueError(f"malformed line {number} in checkpoint file {source}: {line!r}")
        entries.append(entry)
    if len(entries) != expected:
        raise ValueError(
            f"checkpoint file {source} announces {expected} entries on line 2 but holds "
            f"{len(entries)}"
        )
    return entries


def parse_offset_entry(line: str) -> tuple[tuple[str, int], int] | None:
    """``<topic> <partition> <offset>``; None unless three fields (ValueError: not numbers)."""
    fields = line.split()
    if len(fields) != 3:
        return None
    return (fields[0], int(fields[1])), int(fields[2])


def parse_offset_checkpoint(
    text: str, *, source: str = "<checkpoint>"
) -> dict[tuple[str, int], int]:
    """An offset checkpoint's text as {(topic, partition): offset}."""
    return dict(parse_checkpoint(text, parse_offset_entry, source=source))


def _number(lines: list[str], index: int, what: str, source: str) -> int:
    try:
        return int(lines[index].strip())
    except ValueError:
        raise ValueError(
            f"malformed line {index + 1} in checkpoint file {source}: expected the "
            f"{what}, found {lines[index]!r}"
        ) from None
