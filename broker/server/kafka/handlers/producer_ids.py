"""InitProducerId (key 22), versions 0-5: a producer id and epoch for an idempotent producer,
from ``ProducerIdManager.init_producer_id`` as over gRPC (ids come from blocks claimed in
ZooKeeper's ``/latest_producer_id_block``). Any broker answers. From v3 a producer that holds an
id may send it back with its epoch to get the next epoch of the same id (KIP-360).

Not supported: transactions. A request with a ``transactional_id`` gets
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, what Kafka answers a producer that may not use that
transactional id. Both librdkafka and the Java client fail at once on it, with that name; the
core's own answer, INVALID_REQUEST, would have librdkafka retry until init_transactions() times
out. v6 (two-phase commit, KIP-939) is transactional only; ApiVersions caps the version at 5.
"""

from __future__ import annotations

import datetime

from minikafka.broker.replication.requests import InitProducerIdRequest
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.errors import ErrorCode


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
    error_code = answer.error_code
    if body.transactional_id is not None and error_code == ErrorCode.INVALID_REQUEST:
        error_code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED  # see the module docstring
    return request.response(
        {
            "throttle_time": 0,
            "error_code": error_code,
            "producer_id": answer.producer_id,
            "producer_epoch": answer.producer_epoch,
        }
    )
