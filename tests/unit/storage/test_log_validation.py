"""Issue 16: a leader refuses a produced batch whose header this broker cannot honour, and
stores nothing of the request; a follower keeps what its leader stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.storage.log import Log
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.proto.records import iter_batch_headers
from tests.batches import poison_batch, with_attributes
from tests.unit.storage.helpers import Clock, batch, read_all, small_config


def open_log(tmp_path: Path) -> Log:
    return Log(tmp_path / "orders-0", small_config(), time_ms=Clock())


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (poison_batch(5), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
        (poison_batch(7), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
        (with_attributes(batch(2), 0x20), ErrorCode.INVALID_RECORD),  # control
        (with_attributes(batch(2), 0x08), ErrorCode.INVALID_TIMESTAMP),  # LogAppendTime
        (batch(2) + poison_batch(6), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
    ],
    ids=["codec5", "codec7", "control", "log-append-time", "second-batch"],
)
def test_the_leader_refuses_and_stores_nothing(tmp_path: Path, data: bytes, code: int) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(3), leader_epoch=1)
    before = read_all(log)
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(data, leader_epoch=1)
    assert info.value.code == code
    assert log.log_end_offset == 3
    assert read_all(log) == before
    log.append_as_leader(batch(1), leader_epoch=1)  # the partition takes the next append
    assert log.log_end_offset == 4
    log.close()


def test_a_follower_appends_what_its_leader_stored(tmp_path: Path) -> None:
    """A follower must not refuse what the leader accepted (Kafka validates only appends
    from clients): say, a batch an older leader stored before these checks."""
    log = open_log(tmp_path)
    log.append_as_follower(poison_batch(5, base_offset=0, count=2))
    assert log.log_end_offset == 2
    assert [h.base_offset for _, h in iter_batch_headers(read_all(log))] == [0]
    log.close()
