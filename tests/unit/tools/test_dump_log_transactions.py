"""``minikafka dump-log`` on a transactional log: control records as kafka-dump-log prints
them, ``.txnindex`` files, and ``--transaction-info``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from minikafka.broker.replication.partition import Partition, PartitionRegistration
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.cli import main
from minikafka.proto.records import ControlType, encode_batch

SEGMENT = "00000000000000000000"


def _transactional_log(directory: Path) -> Path:
    now = time.time_ns() // 1_000_000
    partition = Partition(Log(directory / "t-0", LogConfig()), 1)
    partition.make_leader(PartitionRegistration(1, 4, (1,), (1,), 0, 1), 0)
    data = encode_batch(
        [(now, b"k", b"v", ())] * 2,
        is_transactional=True,
        producer_id=1000,
        producer_epoch=3,
        base_sequence=0,
    )
    partition.append_records_to_leader(data, -1)  # 0-1
    partition.append_end_txn_marker(1000, 3, 7, ControlType.ABORT, timestamp_ms=now)  # 2
    partition.log.flush()
    partition.log.close()
    return directory / "t-0"


def _dump(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(["dump-log", *args]) == 0
    return capsys.readouterr().out


def test_a_marker_record_says_its_type_and_coordinator_epoch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = _transactional_log(tmp_path)
    out = _dump(capsys, "--files", str(directory / f"{SEGMENT}.log"), "--deep-iteration")
    lines = out.splitlines()
    control = [line for line in lines if "isControl: true" in line]
    assert len(control) == 1
    assert "isTransactional: true" in control[0] and "producerId: 1000" in control[0]
    assert "baseSequence: -1" in control[0] and "producerEpoch: 3" in control[0]
    marker = lines[lines.index(control[0]) + 1]
    assert marker.startswith("| offset: 2 CreateTime: ")
    assert marker.endswith(
        "keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: ABORT coordinatorEpoch: 7"
    )


def test_the_txnindex_is_dumped_as_kafka_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = _transactional_log(tmp_path)
    out = _dump(capsys, "--files", str(directory / f"{SEGMENT}.txnindex"))
    assert out.splitlines()[1:] == [
        "version: 0 producerId: 1000 firstOffset: 0 lastOffset: 2 lastStableOffset: 3"
    ]


def test_transaction_info_is_one_line_per_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = _transactional_log(tmp_path)
    out = _dump(capsys, "--files", str(directory / f"{SEGMENT}.log"), "--transaction-info")
    assert out.splitlines()[1:] == [
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 1 producerId: 1000 producerEpoch: 3 baseSequence: 0 "
        "lastSequence: 1 isTransactional: true isControl: false",
        "baseOffset: 2 lastOffset: 2 producerId: 1000 producerEpoch: 3 baseSequence: -1 "
        "lastSequence: -1 isTransactional: true isControl: true "
        "endTxnMarker: ABORT coordinatorEpoch: 7",
    ]
