"""Client quotas: DescribeClientQuotas and AlterClientQuotas (KIP-546's admin API).

    alice_app = ClientQuotaEntity.of(user="alice", client_id="app")
    admin.alter_client_quotas([
        ClientQuotaAlteration(alice_app, {"producer_byte_rate": 1048576.0}),
        ClientQuotaAlteration(ClientQuotaEntity.of(client_id=None), {"consumer_byte_rate": None}),
    ])                                            # {entity: None | error}
    admin.describe_client_quotas([ClientQuotaFilterComponent.exact("user", "alice")])
                                                  # {entity: {"producer_byte_rate": 1048576.0}}

An entity names a ``user``, a ``client-id`` or both; a name of None is the default
(``<default>``). A value of None in an alteration removes the key. Both go to any broker (in
ZooKeeper mode each writes /config/users and /config/clients itself); the checks are the
broker's (INVALID_REQUEST for an unknown key, a byte rate that is no whole number, ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from minikafka.client.admin._routing import AdminBase, _error
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.errors import KafkaError

__all__ = [
    "ClientQuotaAlteration",
    "ClientQuotaEntity",
    "ClientQuotaFilterComponent",
    "QuotaAdmin",
]

_MATCH_EXACT, _MATCH_DEFAULT, _MATCH_ANY = 0, 1, 2


@dataclass(frozen=True)
class ClientQuotaEntity:
    """``(entity type, name or None for the default)`` pairs, user first."""

    parts: tuple[tuple[str, str | None], ...]

    @classmethod
    def of(cls, **names: str | None) -> ClientQuotaEntity:
        """``of(user="alice", client_id=None)``: keyword ``client_id`` is type ``client-id``."""
        order = {"user": 0, "client-id": 1}
        parts = sorted(
            ((key.replace("_", "-"), name) for key, name in names.items()),
            key=lambda part: order.get(part[0], 2),
        )
        return cls(tuple(parts))

    def __str__(self) -> str:
        return ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in self.parts)


@dataclass(frozen=True)
class ClientQuotaAlteration:
    entity: ClientQuotaEntity
    ops: Mapping[str, float | None]  # None: remove the key


@dataclass(frozen=True)
class ClientQuotaFilterComponent:
    entity_type: str
    match_type: int
    match: str | None = None

    @classmethod
    def exact(cls, entity_type: str, name: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, _MATCH_EXACT, name)

    @classmethod
    def default(cls, entity_type: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, _MATCH_DEFAULT)

    @classmethod
    def any(cls, entity_type: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, _MATCH_ANY)


def _pb_entity(entity: ClientQuotaEntity) -> list[pb.QuotaEntityComponent]:
    return [
        pb.QuotaEntityComponent(entity_type=t)
        if n is None
        else pb.QuotaEntityComponent(entity_type=t, name=n)
        for t, n in entity.parts
    ]


def _entity(components: Iterable[pb.QuotaEntityComponent]) -> ClientQuotaEntity:
    return ClientQuotaEntity(
        tuple((c.entity_type, c.name if c.HasField("name") else None) for c in components)
    )


class QuotaAdmin(AdminBase):
    """Client quotas (Kafka's describeClientQuotas / alterClientQuotas)."""

    def describe_client_quotas(
        self,
        components: Sequence[ClientQuotaFilterComponent] = (),
        *,
        strict: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """The quotas of every entity the filter matches (no components: every entity);
        the broker's error (InvalidRequestError, ...) raised."""
        request = pb.DescribeClientQuotasRequest(
            components=[
                pb.DescribeClientQuotasRequest.Component(
                    entity_type=c.entity_type, match_type=c.match_type, match=c.match
                )
                if c.match is not None
                else pb.DescribeClientQuotasRequest.Component(
                    entity_type=c.entity_type, match_type=c.match_type
                )
                for c in components
            ],
            strict=strict,
        )

        def send(address: str, timeout_s: float) -> pb.DescribeClientQuotasResponse:
            stub = pb_grpc.AdminStub(self._pool.get(address))
            return stub.DescribeClientQuotas(request, timeout=timeout_s)

        response = self._to_any_broker("describeClientQuotas", send, timeout_ms)
        error = _error(response.error_code, response.error_message)
        if error is not None:
            raise error
        return {_entity(e.entity): dict(sorted(e.values.items())) for e in response.entries}

    def alter_client_quotas(
        self,
        alterations: Iterable[ClientQuotaAlteration],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[ClientQuotaEntity, KafkaError | None]:
        request = pb.AlterClientQuotasRequest(
            entries=[
                pb.AlterClientQuotasRequest.Entry(
                    entity=_pb_entity(a.entity),
                    ops=[
                        pb.AlterClientQuotasRequest.Op(
                            key=key, value=value or 0.0, remove=value is None
                        )
                        for key, value in a.ops.items()
                    ],
                )
                for a in alterations
            ],
            validate_only=validate_only,
        )

        def send(address: str, timeout_s: float) -> pb.AlterClientQuotasResponse:
            stub = pb_grpc.AdminStub(self._pool.get(address))
            return stub.AlterClientQuotas(request, timeout=timeout_s)

        response = self._to_any_broker("alterClientQuotas", send, timeout_ms)
        return {_entity(r.entity): _error(r.error_code, r.error_message) for r in response.results}
