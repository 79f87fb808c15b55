"""DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51), v0, answered by
the core's UserScramAdmin (broker/server/core/users.py) the gRPC door calls too; any broker
answers them. The checks and errors are the core's (Kafka's ZooKeeper-mode ones)."""

from __future__ import annotations

from minikafka.broker.server.core.users import ScramDeletion, ScramUpsertion, UserScramAdmin
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.errors import KafkaError


@handler(api_key=50, min_version=0, max_version=0)
async def describe_user_scram_credentials(request: Request, broker: KafkaBroker) -> Entity:
    users = request.body.users
    try:
        results = await _admin(broker).describe(
            None if users is None else [u.name for u in users], request.session
        )
    except KafkaError as exc:  # the whole request: not authorized
        return request.response(
            {
                "throttle_time": 0,
                "error_code": int(exc.code),
                "error_message": exc.message,
                "results": [],
            }
        )
    return request.response(
        {
            "throttle_time": 0,
            "error_code": 0,
            "error_message": None,
            "results": [
                {
                    "user": r.user,
                    "error_code": int(r.error_code),
                    "error_message": r.error_message,
                    "credential_infos": [
                        {"mechanism": c.mechanism, "iterations": c.iterations}
                        for c in r.credential_infos
                    ],
                }
                for r in results
            ],
        }
    )


@handler(api_key=51, min_version=0, max_version=0)
async def alter_user_scram_credentials(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    results = await _admin(broker).alter(
        [
            ScramUpsertion(u.name, u.mechanism, u.iterations, u.salt, u.salted_password)
            for u in body.upsertions
        ],
        [ScramDeletion(d.name, d.mechanism) for d in body.deletions],
        request.session,
    )
    return request.response(
        {
            "throttle_time": 0,
            "results": [
                {"user": r.user, "error_code": int(r.error_code), "error_message": r.error_message}
                for r in results
            ],
        }
    )


def _admin(broker: KafkaBroker) -> UserScramAdmin:
    assert broker.users is not None, "the broker server sets KafkaBroker.users"
    return broker.users
