"""InitProducerId on the ProducerIdManager: ids from blocks claimed in (a fake) ZooKeeper, epochs
bumped for a producer that presents its id (KIP-360), transactions and a lost ZooKeeper refused
with Kafka's codes."""

from __future__ import annotations

import asyncio

from minikafka.broker.replication.producer_id_manager import ProducerIdManager
from minikafka.broker.replication.requests import InitProducerIdRequest
from minikafka.proto.cluster_state import ProducerIdBlock
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import MAX_PRODUCER_EPOCH
from tests.unit.replication.harness import FakeZk


def test_init_producer_id_hands_out_ids_and_bumps_epochs() -> None:
    async def scenario() -> None:
        zk = FakeZk()  # blocks of 10 ids
        ids1 = ProducerIdManager(1, zk.allocate_producer_id_block)
        ids2 = ProducerIdManager(2, zk.allocate_producer_id_block)
        new = InitProducerIdRequest()
        first = await ids1.init_producer_id(new)
        second = await ids1.init_producer_id(new)
        other = await ids2.init_producer_id(new)
        assert (first.error_code, first.producer_id, first.producer_epoch) == (0, 0, 0)
        assert second.producer_id == 1
        assert other.producer_id == 10  # another broker's block
        bumped = await ids1.init_producer_id(InitProducerIdRequest(producer_id=0, producer_epoch=0))
        assert (bumped.producer_id, bumped.producer_epoch) == (0, 1)
        transactional = await ids1.init_producer_id(InitProducerIdRequest(transactional_id="tx"))
        assert transactional.error_code == ErrorCode.INVALID_REQUEST

    asyncio.run(scenario())


def test_a_used_up_block_claims_the_next_and_the_last_epoch_gets_a_new_id() -> None:
    async def scenario() -> None:
        zk = FakeZk()
        ids = ProducerIdManager(1, zk.allocate_producer_id_block)
        handed = [
            (await ids.init_producer_id(InitProducerIdRequest())).producer_id for _ in range(11)
        ]
        assert handed == list(range(11))  # 0-9 from the first block, 10 from the second
        last = await ids.init_producer_id(
            InitProducerIdRequest(producer_id=3, producer_epoch=MAX_PRODUCER_EPOCH - 1)
        )
        assert (last.producer_id, last.producer_epoch) == (11, 0)

    asyncio.run(scenario())


def test_no_block_to_be_had_answers_coordinator_not_available() -> None:
    def zookeeper_away(broker_id: int) -> ProducerIdBlock:
        raise ConnectionError("ZooKeeper connection lost")

    async def scenario() -> None:
        result = await ProducerIdManager(1, zookeeper_away).init_producer_id(
            InitProducerIdRequest()
        )
        assert result.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert "ZooKeeper connection lost" in result.error_message
        assert result.producer_id == -1

    asyncio.run(scenario())
