"""``minikafka dump-log`` on a segment the log cleaner rewrote: offset gaps, empty batches,
delete horizons, and indexes that agree with the cleaned ``.log``."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from minikafka.broker.storage.cleaner import CleanerConfig, LogCleaner, clean_log
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.cli import main
from minikafka.proto.records import encode_batch
from tests.unit.storage.helpers import T0, Clock

SEGMENT = "00000000000000000000"


def test_cleaned_segment_shows_its_offset_gaps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = Clock()
    config = dataclasses.replace(
        LogConfig(), index_interval_bytes=1, cleanup_policy=frozenset({"compact"})
    )
    log = Log(tmp_path / "t-0", config, time_ms=clock)
    for n in range(6):  # offsets 0-5: k0..k2 twice, then k1 deleted at 6
        log.append_as_leader(encode_batch([(T0 + n, f"k{n % 3}".encode(), b"v%d" % n, ())]), 1)
    log.append_as_leader(encode_batch([(T0 + 6, b"k1", None, ())]), 1)
    log.roll()
    log.append_as_leader(encode_batch([(T0 + 7, b"k9", b"v", ())]), 1)
    assert clean_log(LogCleaner(CleanerConfig(), time_ms=clock), log, force=True) is not None
    log.flush()
    log.close()
    segment = tmp_path / "t-0" / f"{SEGMENT}.log"
    assert main(["dump-log", "--files", str(segment), "--deep-iteration"]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"\| offset: (\d+)", out) == ["3", "5", "6"]
    # Batches 0-2 and 4 lost their only record and went; the tombstone's batch has a horizon.
    assert re.findall(r"baseOffset: (\d+) lastOffset", out) == ["3", "5", "6"]
    assert f"deleteHorizonMs: OptionalLong[{clock() + config.delete_retention_ms}]" in out
    assert "isvalid: false" not in out and "invalid bytes" not in out
    for index in (".index", ".timeindex"):
        path = tmp_path / "t-0" / f"{SEGMENT}{index}"
        assert main(["dump-log", "--files", str(path), "--verify-index-only"]) == 0
        assert "mismatch" not in capsys.readouterr().err.lower()
