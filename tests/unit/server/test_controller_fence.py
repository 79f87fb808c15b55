"""ControllerFence: which controller requests go on to the ReplicaManager, and when ZooKeeper is
read (the znodes faked; the integration test tests/integration/test_control_fencing.py sends
forged requests to real brokers)."""

from __future__ import annotations

import asyncio

from minikafka.broker.server.core.controller_fence import ControllerFence, Refusal
from minikafka.proto.cluster_state import Versioned
from minikafka.proto.errors import ErrorCode
from minikafka.zk.zk_data import ControllerRegistration


class Znodes:
    """/controller and /controller_epoch; counts the reads of /controller."""

    def __init__(self, controller_id: int | None, epoch: int) -> None:
        self.controller_id, self.epoch = controller_id, epoch
        self.reads = 0
        self.fail = False

    def get_controller(self) -> ControllerRegistration | None:
        self.reads += 1
        if self.fail:
            raise ConnectionError("ZooKeeper is unreachable")
        return None if self.controller_id is None else ControllerRegistration(self.controller_id)

    def get_controller_epoch(self) -> Versioned[int] | None:
        if self.fail:
            raise ConnectionError("ZooKeeper is unreachable")
        return Versioned(self.epoch, self.epoch)

    def elect(self, controller_id: int) -> None:
        self.controller_id, self.epoch = controller_id, self.epoch + 1


def check(
    fence: ControllerFence, controller_id: int, epoch: int, broker_epoch: int = 7
) -> Refusal | None:
    return asyncio.run(fence.check(controller_id, epoch, broker_epoch))


def test_the_current_controller_is_confirmed_once_then_let_through_without_reads() -> None:
    znodes = Znodes(0, 4)
    fence = ControllerFence(znodes)
    assert check(fence, 0, 4) is None
    assert fence.confirmed == (0, 4) and znodes.reads == 1
    for _ in range(5):
        assert check(fence, 0, 4) is None
    assert check(fence, 0, 3) is None  # older: the ReplicaManager refuses it as stale
    assert znodes.reads == 1


def test_a_forged_newer_epoch_is_refused_and_does_not_displace_the_controller() -> None:
    znodes = Znodes(0, 4)
    fence = ControllerFence(znodes)
    assert check(fence, 0, 4) is None
    forged = check(fence, 1, 5)
    assert forged is not None and forged.error == ErrorCode.STALE_CONTROLLER_EPOCH
    assert "ZooKeeper names broker 0, epoch 4" in forged.message
    # the right epoch, claimed by another broker
    impostor = check(fence, 2, 4)
    assert impostor is not None and impostor.error == ErrorCode.STALE_CONTROLLER_EPOCH
    assert "broker 0 is" in impostor.message
    assert fence.confirmed == (0, 4)
    assert check(fence, 0, 4) is None


def test_the_epoch_read_from_zookeeper_from_another_broker_is_refused() -> None:
    znodes = Znodes(0, 4)
    fence = ControllerFence(znodes)
    # a client that read /controller_epoch but is not broker 0, before any real request
    refused = check(fence, 1, 4)
    assert refused is not None and refused.error == ErrorCode.STALE_CONTROLLER_EPOCH
    assert fence.confirmed is None


def test_a_new_controller_is_confirmed_and_the_old_epoch_then_falls_behind() -> None:
    znodes = Znodes(0, 4)
    fence = ControllerFence(znodes)
    assert check(fence, 0, 4) is None
    znodes.elect(2)
    assert check(fence, 2, 5) is None
    assert fence.confirmed == (2, 5) and znodes.reads == 2
    late = check(fence, 0, 4)  # the old controller's last request: stale, the RM says so
    assert late is None


def test_broker_epoch_minus_one_is_refused_before_anything_else() -> None:
    znodes = Znodes(0, 4)
    refused = check(ControllerFence(znodes), 0, 4, broker_epoch=-1)
    assert refused is not None and refused.error == ErrorCode.STALE_BROKER_EPOCH
    assert "-1" in refused.message and znodes.reads == 0


def test_without_a_controller_or_zookeeper_nothing_new_is_obeyed() -> None:
    znodes = Znodes(None, 4)
    fence = ControllerFence(znodes)
    gone = check(fence, 0, 4)
    assert gone is not None and "no controller" in gone.message
    znodes.controller_id, znodes.fail = 0, True
    unreachable = check(fence, 0, 4)
    assert unreachable is not None and unreachable.error == ErrorCode.STALE_CONTROLLER_EPOCH
    assert "ZooKeeper is unreachable" in unreachable.message
    znodes.fail = False
    assert check(fence, 0, 4) is None


def test_zookeeper_is_synced_before_a_new_epoch_is_read_and_only_then() -> None:
    znodes = Znodes(0, 4)
    synced: list[int] = []
    fence = ControllerFence(znodes, sync=lambda: synced.append(znodes.reads))
    assert check(fence, 0, 4) is None
    assert check(fence, 0, 4) is None
    assert synced == [0]  # once, before the first read
