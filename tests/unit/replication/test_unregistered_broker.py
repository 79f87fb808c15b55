"""A restarted broker that has not registered yet (it waits for its previous ZooKeeper session
to expire) holds controller requests until it has, then obeys those for its new registration
and refuses those for the previous one. Found by the random-kill run
(tests/integration/test_chaos.py): an UpdateMetadata for the previous registration, carrying
only the partitions whose ISR had changed, reached the new process first, and clients asking it
saw the topic with some partitions missing (the producer gave up on a send to one of them)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import TP, Cluster, run


def test_controller_requests_wait_for_the_registration(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            node = cluster[1]
            node.broker_epoch = -1  # restarted, not registered yet
            rm = node.replica_manager
            # for the previous registration
            previous = cluster.leader_and_isr(1, 3, [1, 2], [1, 2], broker_epoch=101)
            # for the one being made
            current = cluster.leader_and_isr(1, 3, [1, 2], [1, 2], broker_epoch=140)

            async def admitted(request_epoch: int) -> ErrorCode:
                await rm.wait_until_registered(5.0)
                return rm.check_controller_request(cluster.controller_epoch, request_epoch)

            held_previous = asyncio.ensure_future(admitted(previous.broker_epoch))
            held_current = asyncio.ensure_future(admitted(current.broker_epoch))
            await asyncio.sleep(0.2)
            assert not held_previous.done() and not held_current.done()
            node.broker_epoch = 140
            rm.registered()
            assert await held_previous == ErrorCode.STALE_BROKER_EPOCH
            assert await held_current == ErrorCode.NONE
            assert rm.get_partition(TP) is None
            response = await rm.become_leader_or_follower(current)
            assert response.error_code == ErrorCode.NONE
            partition = rm.get_partition(TP)
            assert partition is not None and partition.is_leader
        finally:
            await cluster.stop()

    run(scenario)


def test_still_unregistered_after_the_wait_is_refused(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1, 2))
        await cluster.start()
        try:
            cluster[1].broker_epoch = -1
            rm = cluster[1].replica_manager
            await rm.wait_until_registered(0.1)
            request = cluster.leader_and_isr(1, 3, [1, 2], [1, 2], broker_epoch=101)
            refused = await rm.become_leader_or_follower(request)
            assert refused.error_code == ErrorCode.STALE_BROKER_EPOCH
            assert rm.get_partition(TP) is None
        finally:
            await cluster.stop()

    run(scenario)
