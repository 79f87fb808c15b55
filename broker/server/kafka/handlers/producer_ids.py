"""InitProducerId (key 22), versions 0-5: a producer id and epoch for an idempotent producer,
from ``ProducerIdManager.init_producer_id`` as over gRPC (ids come from blocks claimed in
ZooKeeper's ``/latest_producer_id_block``). Any broker answers. From v3 a producer that holds an
id may send it back with its epoch to get the next epoch of the same id (KIP-360).

With a ``transactional_id`` the transaction coordinator of that id answers (core/transactions.py):
the id's producer id with its epoch bumped, which fences the producer that held it before
(KIP-98), or NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / CONCURRENT_TRANSACTIONS, which
the client retries. v6 (two-phase commit, KIP-939) is newer than Kafka 3.9; ApiVersions caps
the version at 5.
"""

from __future__ import annotations

import datetime

from minikafka.broker.replication.requests import InitProducerIdRequest
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.handlers.transactions import fenced_for
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity


@handler(api_key=22, min_version=0, max_version=5)
async def init_producer_id(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    answer = await broker.data.init_producer_id(
        InitProducerIdRequest(
            body.transactional_id,
            body.transaction_timeout // datetime.timedelta(milliseconds=1),
            getattr(body, "producer_id", -1),
            getattr(body, "producer_epoch", -1),
        ),
        request.session,
    )
    return request.response(
        {
            "throttle_time": 0,
            "error_code": fenced_for(request, answer.error_code),
            "producer_id": answer.producer_id,
            "producer_epoch": answer.producer_epoch,
        }
    )
