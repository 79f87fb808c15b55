"""``minikafka dump-log`` on segment files written by the storage engine."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.cli import main
from minikafka.proto.records import encode_batch
from tests.batches import poison_batch
from tests.unit.storage.helpers import T0, Clock

SEGMENT = "00000000000000000000"


def _write_log(directory: Path, batches: int = 5, records: int = 3) -> Path:
    config = dataclasses.replace(LogConfig(), index_interval_bytes=1)  # an entry per batch
    log = Log(directory / "t-0", config, time_ms=Clock())
    for b in range(batches):
        data = encode_batch(
            [
                (
                    T0 + b * 10 + i,
                    f"key-{b}-{i}".encode(),
                    f"value-{b}-{i}".encode(),
                    (("h", b"x"),),
                )
                for i in range(records)
            ]
        )
        log.append_as_leader(data, leader_epoch=7)
    log.flush()
    log.close()
    return directory / "t-0"


def _dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()  # drop what the storage engine logged while the test wrote the log
    code = main(["dump-log", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_log_prints_one_line_per_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    part = _write_log(tmp_path)
    code, out, _ = _dump(capsys, "--files", str(part / f"{SEGMENT}.log"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"Dumping {part / SEGMENT}.log"
    assert lines[1] == "Log starting offset: 0"
    batch_lines = lines[2:]
    assert len(batch_lines) == 5
    position = 0
    for b, line in enumerate(batch_lines):
        fields = dict(re.findall(r"(\w+): (\S+)", line))
        assert fields["baseOffset"] == str(b * 3)
        assert fields["lastOffset"] == str(b * 3 + 2)
        assert fields["count"] == "3"
        assert fields["partitionLeaderEpoch"] == "7"
        assert fields["position"] == str(position)
        assert fields["CreateTime"] == str(T0 + b * 10 + 2)
        assert fields["magic"] == "2"
        assert fields["compresscodec"] == "none"
        assert fields["isvalid"] == "true"
        position += int(fields["size"])
    assert position == (part / f"{SEGMENT}.log").stat().st_size


def test_print_data_log_prints_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    part = _write_log(tmp_path, batches=2, records=2)
    _, out, _ = _dump(capsys, "--files", str(part / f"{SEGMENT}.log"), "--print-data-log")
    records = [line for line in out.splitlines() if line.startswith("| ")]
    assert len(records) == 4
    assert records[3] == (
        f"| offset: 3 CreateTime: {T0 + 11} keySize: 7 valueSize: 9 sequence: -1 "
        "headerKeys: [h] key: key-1-1 payload: value-1-1"
    )
    _, plain, _ = _dump(capsys, "--files", str(part / f"{SEGMENT}.log"))
    assert not any(line.startswith("| ") for line in plain.splitlines())


def test_corrupt_batch_is_reported_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    part = _write_log(tmp_path, batches=3)
    log_file = part / f"{SEGMENT}.log"
    data = bytearray(log_file.read_bytes())
    size = len(data) // 3
    data[size + 70] ^= 0xFF  # a record byte of the second batch: its CRC no longer holds
    log_file.write_bytes(bytes(data) + b"\x00\x00\x00")  # and a torn tail
    code, out, _ = _dump(capsys, "--files", str(log_file), "--print-data-log")
    assert code == 0
    valid = re.findall(r"isvalid: (\w+)", out)
    assert valid == ["true", "false", "true"]
    assert f"Found 3 invalid bytes at the end of {SEGMENT}.log" in out


def test_offset_index_entries_and_mismatch_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    part = _write_log(tmp_path, batches=4)
    index = part / f"{SEGMENT}.index"
    code, out, err = _dump(capsys, "--files", str(index))
    assert code == 0
    entries = [line for line in out.splitlines() if line.startswith("offset: ")]
    assert entries, out
    log_lines = _dump(capsys, "--files", str(part / f"{SEGMENT}.log"))[1].splitlines()[2:]
    by_position = {
        int(m["position"]): int(m["lastOffset"])
        for m in (dict(re.findall(r"(\w+): (\S+)", line)) for line in log_lines)
    }
    for line in entries:
        offset, position = (int(x) for x in re.findall(r"\d+", line))
        assert by_position[position] == offset
    assert err == ""

    # Point the second entry at the first batch: the report names it.
    second_offset = int(entries[1].split()[1])
    raw = bytearray(index.read_bytes())
    raw[12:16] = (0).to_bytes(4, "big")
    index.write_bytes(bytes(raw))
    _, _, err = _dump(capsys, "--files", str(index), "--verify-index-only")
    assert f"Mismatches in :{index}" in err
    assert f"Index offset: {second_offset}, log offset: 2" in err


def test_time_index_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    part = _write_log(tmp_path, batches=3)
    code, out, err = _dump(capsys, "--files", str(part / f"{SEGMENT}.timeindex"))
    assert code == 0
    entries = [line for line in out.splitlines() if line.startswith("timestamp: ")]
    assert entries
    for line in entries:  # each entry is a batch's max timestamp and last offset
        timestamp, offset = (int(x) for x in re.findall(r"\d+", line))
        b = (offset - 2) // 3
        assert (timestamp, offset) == (T0 + b * 10 + 2, b * 3 + 2)
    assert err == ""


@pytest.mark.parametrize("suffix", [".log", ".index", ".timeindex"])
def test_a_missing_file_is_the_error_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    path = tmp_path / f"{SEGMENT}{suffix}"
    code, out, err = _dump(capsys, "--files", str(path))
    assert (code, out) == (1, "")
    assert err == f"minikafka dump-log: cannot read {path}: No such file or directory\n"


def test_a_batch_with_an_unknown_codec_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 16: a batch an older broker stored with codec 5 (CRC valid) killed dump-log."""
    part = _write_log(tmp_path, batches=2, records=3)
    log_file = part / f"{SEGMENT}.log"
    after = encode_batch([(T0, b"k", b"after", ())], base_offset=8)
    log_file.write_bytes(log_file.read_bytes() + poison_batch(5, base_offset=6) + after)
    code, out, err = _dump(capsys, "--files", str(log_file), "--print-data-log")
    assert code == 0 and "Traceback" not in out + err
    lines = out.splitlines()
    batch_line = next(line for line in lines if line.startswith("baseOffset: 6 "))
    assert "compresscodec: unknown(5)" in batch_line and "isvalid: true" in batch_line
    following = lines[lines.index(batch_line) + 1 :]
    assert following[0] == (
        "| cannot decode the records of this batch: UNSUPPORTED_COMPRESSION_TYPE (76): record "
        "batch at offset 6 names compression codec 5, which Kafka does not define (0 none, "
        "1 gzip, 2 snappy, 3 lz4, 4 zstd)"
    )
    assert following[1].startswith("baseOffset: 8 ")  # the batches after it still print
    assert following[2].endswith("payload: after")
