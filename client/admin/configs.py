"""Topic and broker configs: DescribeConfigs and IncrementalAlterConfigs (SET / DELETE).

admin.describe_topic_configs("orders")["retention.ms"]    # ConfigEntry(value=..., source=...)
admin.incremental_alter_configs("orders", {"retention.ms": "60000", "cleanup.policy": None})
admin.alter_broker_configs(None, {"log.retention.ms": "3600000"})   # cluster-wide default
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import grpc

from minikafka.client.admin._routing import AdminBase, _error, _rpc_error
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.errors import ErrorCode, error_for_code


@dataclass(frozen=True)
class ConfigSynonym:
    """One level's value of a config (Kafka's DescribeConfigs synonyms)."""

    name: str
    value: str | None
    source: int  # pb.ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int  # pb.ConfigSource
    is_default: bool
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()  # highest precedence first


class ConfigAdmin(AdminBase):
    """Configs of topics and brokers; described and altered at any broker, except a broker's
    own configs, described by that broker."""

    def describe_topic_configs(
        self, topic: str, *, timeout_ms: int | None = None
    ) -> dict[str, ConfigEntry]:
        """The topic's configs (overrides and defaults) by name, from any broker."""
        return self._describe_configs(pb.CONFIG_RESOURCE_TYPE_TOPIC, topic, None, timeout_ms)

    def describe_broker_configs(
        self, broker_id: int | None = None, *, timeout_ms: int | None = None
    ) -> dict[str, ConfigEntry]:
        """Broker ``broker_id``'s configs with their sources, asked of that broker; None = the
        cluster-wide dynamic defaults (only those set), from any broker."""
        if broker_id is None:
            return self._describe_configs(pb.CONFIG_RESOURCE_TYPE_BROKER, "", None, timeout_ms)
        timeout_s = self._timeout(timeout_ms) / 1000
        node = self._cluster(refresh=False, timeout_s=timeout_s).brokers.get(broker_id)
        if node is None:
            node = self._cluster(refresh=True, timeout_s=timeout_s).brokers.get(broker_id)
        if node is None:
            raise error_for_code(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not alive")
        return self._describe_configs(
            pb.CONFIG_RESOURCE_TYPE_BROKER, str(broker_id), node.address, timeout_ms
        )

    def _describe_configs(
        self,
        resource_type: pb.ConfigResourceType,
        name: str,
        address: str | None,
        timeout_ms: int | None,
    ) -> dict[str, ConfigEntry]:
        request = pb.DescribeConfigsRequest(
            resources=[
                pb.DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=resource_type, resource_name=name
                )
            ]
        )

        def send(address: str, timeout_s: float) -> pb.DescribeConfigsResponse:
            stub = pb_grpc.AdminStub(self._pool.get(address))
            return stub.DescribeConfigs(request, timeout=timeout_s)

        if address is None:
            response = self._to_any_broker("describeConfigs", send, timeout_ms)
        else:
            try:
                response = send(address, self._timeout(timeout_ms) / 1000)
            except grpc.RpcError as exc:
                raise _rpc_error(exc) from None
        entries: dict[str, ConfigEntry] = {}
        for result in response.results:
            error = _error(result.error_code, result.error_message)
            if error is not None:
                raise error
            for c in result.configs:
                entries[c.name] = ConfigEntry(
                    name=c.name,
                    value=c.value if c.HasField("value") else None,
                    source=c.config_source,
                    is_default=c.is_default,
                    read_only=c.read_only,
                    is_sensitive=c.is_sensitive,
                    synonyms=tuple(
                        ConfigSynonym(
                            y.name, y.value if y.HasField("value") else None, int(y.source)
                        )
                        for y in c.synonyms
                    ),
                )
        return dict(sorted(entries.items()))

    def incremental_alter_configs(
        self,
        topic: str,
        operations: Mapping[str, str | None],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        """Set topic configs (``{name: value}``) or remove overrides (``{name: None}``), as
        Kafka's incrementalAlterConfigs with SET / DELETE; raises the topic's error."""
        self._alter_configs(
            pb.CONFIG_RESOURCE_TYPE_TOPIC, topic, operations, validate_only, timeout_ms
        )

    def alter_broker_configs(
        self,
        broker_id: int | None,
        operations: Mapping[str, str | None],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        """Set (``{name: value}``) or delete (``{name: None}``) dynamic broker configs of
        ``broker_id``, or (None) the cluster-wide defaults; raises the broker's error."""
        name = "" if broker_id is None else str(broker_id)
        self._alter_configs(
            pb.CONFIG_RESOURCE_TYPE_BROKER, name, operations, validate_only, timeout_ms
        )

    def _alter_configs(
        self,
        resource_type: pb.ConfigResourceType,
        name: str,
        operations: Mapping[str, str | None],
        validate_only: bool,
        timeout_ms: int | None,
    ) -> None:
        request = pb.IncrementalAlterConfigsRequest(
            resources=[
                pb.IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=resource_type,
                    resource_name=name,
                    configs=[
                        pb.IncrementalAlterConfigsRequest.AlterableConfig(
                            name=name,
                            config_operation=pb.CONFIG_OPERATION_DELETE
                            if value is None
                            else pb.CONFIG_OPERATION_SET,
                            value=value,
                        )
                        for name, value in operations.items()
                    ],
                )
            ],
            validate_only=validate_only,
        )

        def send(address: str, timeout_s: float) -> pb.IncrementalAlterConfigsResponse:
            stub = pb_grpc.AdminStub(self._pool.get(address))
            return stub.IncrementalAlterConfigs(request, timeout=timeout_s)

        response = self._to_any_broker("incrementalAlterConfigs", send, timeout_ms)
        for r in response.responses:
            error = _error(r.error_code, r.error_message)
            if error is not None:
                raise error
