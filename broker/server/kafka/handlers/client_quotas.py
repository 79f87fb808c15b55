"""DescribeClientQuotas (key 48) and AlterClientQuotas (key 49), v0-1, answered by the core's
ClientQuotaAdmin (broker/server/core/client_quotas.py); any broker answers them. The checks
and errors are the core's (Kafka's ZooKeeper-mode ones)."""

from __future__ import annotations

from minikafka.broker.server.core.client_quotas import (
    ClientQuotaAdmin,
    QuotaAlteration,
    QuotaComponent,
    QuotaFilterComponent,
    QuotaOp,
)
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.errors import KafkaError


@handler(api_key=48, min_version=0, max_version=1)
async def describe_client_quotas(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    try:
        entries = await _admin(broker).describe(
            [QuotaFilterComponent(c.entity_type, c.match_type, c.match) for c in body.components],
            body.strict,
            request.session,
        )
    except KafkaError as exc:
        return request.response(
            {
                "throttle_time": 0,
                "error_code": int(exc.code),
                "error_message": exc.message,
                "entries": None,
            }
        )
    return request.response(
        {
            "throttle_time": 0,
            "error_code": 0,
            "error_message": None,
            "entries": [
                {
                    "entity": [
                        {"entity_type": c.entity_type, "entity_name": c.name} for c in e.entity
                    ],
                    "values": [{"key": k, "value": v} for k, v in e.values],
                }
                for e in entries
            ],
        }
    )


@handler(api_key=49, min_version=0, max_version=1)
async def alter_client_quotas(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    results = await _admin(broker).alter(
        [
            QuotaAlteration(
                tuple(QuotaComponent(e.entity_type, e.entity_name) for e in entry.entity),
                tuple(QuotaOp(op.key, float(op.value), op.remove) for op in entry.ops),
            )
            for entry in body.entries
        ],
        body.validate_only,
        request.session,
    )
    return request.response(
        {
            "throttle_time": 0,
            "entries": [
                {
                    "error_code": int(r.error_code),
                    "error_message": r.error_message,
                    "entity": [
                        {"entity_type": c.entity_type, "entity_name": c.name} for c in r.entity
                    ],
                }
                for r in results
            ],
        }
    )


def _admin(broker: KafkaBroker) -> ClientQuotaAdmin:
    assert broker.client_quotas is not None, "the broker server sets KafkaBroker.client_quotas"
    return broker.client_quotas
