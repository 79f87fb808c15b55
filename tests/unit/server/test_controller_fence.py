"""ControllerFence: which controller requests go on to the ReplicaManager, and when ZooKeeper is
read (the znodes faked; the integration test tests/integration/test_control_fencing.py sends
forged requests to real brokers)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from minikafka.broker.server.core.controller_fence import ControllerFence, Refusal
from minikafka.proto.cluster_state import Versioned
from minikafka.proto.errors import ErrorCode
from minikafka.zk.zk_data import ControllerRegistration

BROKER_ID = 1


class Znodes:
    """/controller, /controller_epoch and /brokers/ids/1 (its czxid, the broker epoch); counts
    the reads of /controller and of the registration."""

    def __init__(self, controller_id: int | None, epoch: int) -> None:
        self.controller_id, self.epoch = controller_id, epoch
        self.broker_epoch = 7
        self.reads = 0
        self.broker_reads = 0
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

    def get_broker_epoch(self, broker_id: int) -> int | None:
        assert broker_id == BROKER_ID
        self.broker_reads += 1
        if self.fail:
            raise ConnectionError("ZooKeeper is unreachable")
        return self.broker_epoch

    def elect(self, controller_id: int) -> None:
        self.controller_id, self.epoch = controller_id, self.epoch + 1


def fence_of(znodes: Znodes, sync: Callable[[], object] | None = None) -> ControllerFence:
    """The fence of broker 1, whose current epoch is 7."""
    return ControllerFence(znodes, broker_id=BROKER_ID, broker_epoch=lambda: 7, sync=sync)


def check(
    fence: ControllerFence, controller_id: int, epoch: int, broker_epoch: int = 7
) -> Refusal | None:
    return asyncio.run(fence.check(controller_id, epoch, broker_epoch))


def test_the_current_controller_is_confirmed_once_then_let_through_without_reads() -> None:
    znodes = Znodes(0, 4)
    fence = fence_of(znodes)
    assert check(fence, 0, 4) is None
    assert fence.confirmed == (0, 4) and znodes.reads == 1
    for _ in range(5):
        assert check(fence, 0, 4) is None
    assert check(fence, 0, 3) is None  # older: the ReplicaManager refuses it as stale
    assert znodes.reads == 1


def test_a_forged_newer_epoch_is_refused_and_does_not_displace_the_controller() -> None:
    znodes = Znodes(0, 4)
    fence = fence_of(znodes)
    assert check(fence, 0, 4) is None
    forged = check(fence, 1, 5)
    assert forged == Refusal(ErrorCode.STALE_CONTROLLER_EPOCH, "stale controller epoch")
    # the right epoch, claimed by another broker: the same words, so the answer does not tell
    # a forger which epoch is the current one, nor (as it once did) who the controller is
    impostor = check(fence, 2, 4)
    assert impostor == Refusal(ErrorCode.STALE_CONTROLLER_EPOCH, "stale controller epoch")
    assert fence.confirmed == (0, 4)
    assert check(fence, 0, 4) is None


def test_the_epoch_read_from_zookeeper_from_another_broker_is_refused() -> None:
    znodes = Znodes(0, 4)
    fence = fence_of(znodes)
    # a client that read /controller_epoch but is not broker 0, before any real request
    refused = check(fence, 1, 4)
    assert refused is not None and refused.error == ErrorCode.STALE_CONTROLLER_EPOCH
    assert fence.confirmed is None


def test_a_new_controller_is_confirmed_and_the_old_epoch_then_falls_behind() -> None:
    znodes = Znodes(0, 4)
    fence = fence_of(znodes)
    assert check(fence, 0, 4) is None
    znodes.elect(2)
    assert check(fence, 2, 5) is None
    assert fence.confirmed == (2, 5) and znodes.reads == 2
    late = check(fence, 0, 4)  # the old controller's last request: stale, the RM says so
    assert late is None


def test_broker_epoch_minus_one_is_refused_before_anything_else() -> None:
    znodes = Znodes(0, 4)
    refused = check(fence_of(znodes), 0, 4, broker_epoch=-1)
    assert refused == Refusal(ErrorCode.STALE_BROKER_EPOCH, "unknown broker epoch")
    assert znodes.reads == znodes.broker_reads == 0


def test_the_broker_epoch_must_be_this_brokers_current_one() -> None:
    znodes = Znodes(0, 4)
    fence = fence_of(znodes)
    assert check(fence, 0, 4, broker_epoch=7) is None
    assert znodes.broker_reads == 0  # the current epoch needs no read
    older = check(fence, 0, 4, broker_epoch=6)
    assert older == Refusal(ErrorCode.STALE_BROKER_EPOCH, "stale broker epoch")
    # Kafka would obey any larger epoch; one ZooKeeper does not hold is made up
    for forged in (8, 1 << 40):
        refused = check(fence, 0, 4, broker_epoch=forged)
        assert refused == Refusal(ErrorCode.STALE_BROKER_EPOCH, "unknown broker epoch")
    assert znodes.reads == 1  # refused before the controller epoch was even looked at


def test_a_larger_broker_epoch_zookeeper_holds_is_the_registration_being_made() -> None:
    # The broker registered again (a new session); the controller saw the new znode and sent
    # its requests before the broker had its new epoch back from ZooKeeper.
    znodes = Znodes(0, 4)
    znodes.broker_epoch = 9
    fence = fence_of(znodes)
    assert check(fence, 0, 4, broker_epoch=9) is None
    assert znodes.broker_reads == 1
    znodes.fail = True
    unreadable = check(fence, 0, 4, broker_epoch=9)
    assert unreadable == Refusal(ErrorCode.STALE_BROKER_EPOCH, "unknown broker epoch")


def test_without_a_controller_or_zookeeper_nothing_new_is_obeyed() -> None:
    znodes = Znodes(None, 4)
    fence = fence_of(znodes)
    gone = check(fence, 0, 4)
    assert gone == Refusal(ErrorCode.STALE_CONTROLLER_EPOCH, "stale controller epoch")
    znodes.controller_id, znodes.fail = 0, True
    unreachable = check(fence, 0, 4)
    assert unreachable == Refusal(
        ErrorCode.STALE_CONTROLLER_EPOCH, "controller epoch cannot be confirmed now"
    )
    znodes.fail = False
    assert check(fence, 0, 4) is None


def test_zookeeper_is_synced_before_a_new_epoch_is_read_and_only_then() -> None:
    znodes = Znodes(0, 4)
    synced: list[int] = []
    fence = fence_of(znodes, sync=lambda: synced.append(znodes.reads))
    assert check(fence, 0, 4) is None
    assert check(fence, 0, 4) is None
    assert synced == [0]  # once, before the first read
