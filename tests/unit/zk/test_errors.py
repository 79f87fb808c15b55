"""The zk package's errors: NOT_CONTROLLER for a fenced write, ZooKeeper errors otherwise."""

from __future__ import annotations

from minikafka.proto.cluster_state import BadZNodeVersionError
from minikafka.proto.errors import ErrorCode, KafkaError
from minikafka.zk import errors


def test_controller_moved_answers_not_controller() -> None:
    error = errors.ControllerMovedError("epoch moved")
    assert isinstance(error, KafkaError)
    assert error.code is ErrorCode.NOT_CONTROLLER
    assert error.retriable


def test_zookeeper_errors_say_what_happened() -> None:
    duplicate = errors.BrokerIdAlreadyRegisteredError(3)
    assert isinstance(duplicate, errors.ZNodeExistsError)
    assert "broker id 3 is already registered" in str(duplicate)
    assert duplicate.path == "/brokers/ids/3"
    stale = BadZNodeVersionError("/brokers/topics/t/partitions/0/state", 4)
    assert "zk version 4" in str(stale)
    assert isinstance(errors.ElectionInProgressError(), errors.ZkStoreError)


def test_exports() -> None:
    assert set(errors.__all__) == {
        name
        for name in vars(errors)
        if name[0].isupper() and name not in {"ClassVar", "ErrorCode", "KafkaError"}
    }
