"""SaslHandshake (17) and SaslAuthenticate (36) outside an exchange: ILLEGAL_SASL_STATE.

The exchange itself is served by the connection before any handler runs
(sasl_authenticator.py). A request that reaches these handlers came on a PLAINTEXT listener, or
after the connection authenticated; Kafka answers both with ILLEGAL_SASL_STATE (and, for the
handshake, an empty list of mechanisms), so a client configured for SASL against a PLAINTEXT
listener gets that error at once instead of a dropped connection or a hang. Re-authentication
(KIP-368) is not supported, so a second exchange is refused the same way.
"""

from __future__ import annotations

from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.errors import ErrorCode


def _why(request: Request) -> str:
    protocol = request.session.security_protocol
    if protocol.startswith("SASL_"):
        return "SaslAuthenticate request received after successful authentication"
    return f"SASL is not enabled on this listener: its security protocol is {protocol}"


@handler(api_key=17, min_version=0, max_version=1)
async def sasl_handshake(request: Request, broker: KafkaBroker) -> Entity:
    return request.response({"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []})


@handler(api_key=36, min_version=0, max_version=2)
async def sasl_authenticate(request: Request, broker: KafkaBroker) -> Entity:
    return request.response(
        {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": _why(request),
            "auth_bytes": b"",
            "session_lifetime": 0,
        }
    )
