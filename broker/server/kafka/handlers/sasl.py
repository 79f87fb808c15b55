"""SaslHandshake (17) and SaslAuthenticate (36) on a PLAINTEXT listener: refused as Kafka does.

SASL is not supported yet: every Kafka listener here is PLAINTEXT. Kafka answers a SASL request
on a PLAINTEXT listener with ILLEGAL_SASL_STATE (and, for the handshake, an empty list of enabled
mechanisms), so a client configured for SASL gets that error at once instead of a dropped
connection or a hang; so do we.
"""

from __future__ import annotations

from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.errors import ErrorCode

_NOT_SASL = "SASL is not supported: this listener's security protocol is PLAINTEXT"


@handler(api_key=17, min_version=0, max_version=1)
async def sasl_handshake(request: Request, broker: KafkaBroker) -> Entity:
    return request.response({"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []})


@handler(api_key=36, min_version=0, max_version=2)
async def sasl_authenticate(request: Request, broker: KafkaBroker) -> Entity:
    return request.response(
        {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": _NOT_SASL,
            "auth_bytes": b"",
            "session_lifetime": 0,
        }
    )
