"""ACLs: DescribeAcls, CreateAcls and DeleteAcls (Kafka's Admin describeAcls, createAcls,
deleteAcls), answered by any broker.

    binding = AclBinding(
        ResourcePattern(ResourceType.TOPIC, "orders"),
        AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
    )
    raise_first(admin.create_acls([binding]))                  # {binding: None | KafkaError}
    admin.describe_acls(AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, None,
                                                               PatternType.ANY)))
    admin.delete_acls([binding_filter])          # {filter: [deleted bindings] | KafkaError}

The values are proto.acl's, the ones the broker speaks of. A broker without an authorizer
answers SECURITY_DISABLED (raised by describe_acls, per item by the others).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import grpc

from minikafka.client.admin._routing import AdminBase, _error, _rpc_error
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from minikafka.proto.acl_messages import binding_message
from minikafka.proto.errors import ErrorCode, KafkaError, error_for_code

__all__ = ["AclAdmin"]


class AclAdmin(AdminBase):
    """ACLs, asked of any broker (or of one: ``broker_id``, to see what that broker holds)."""

    def describe_acls(
        self,
        binding_filter: AclBindingFilter,
        *,
        broker_id: int | None = None,
        timeout_ms: int | None = None,
    ) -> list[AclBinding]:
        """The bindings ``binding_filter`` matches; raises the request's error."""
        request = pb.DescribeAclsRequest(filter=_pb_filter(binding_filter))

        def send(address: str, timeout_s: float) -> pb.DescribeAclsResponse:
            return pb_grpc.AdminStub(self._pool.get(address)).DescribeAcls(
                request, timeout=timeout_s
            )

        if broker_id is None:
            response = self._to_any_broker("describeAcls", send, timeout_ms)
        else:
            response = self._send_to_broker(broker_id, send, timeout_ms)
        error = _error(response.error_code, response.error_message)
        if error is not None:
            raise error
        return [_binding(b) for b in response.acls]

    def create_acls(
        self, bindings: Sequence[AclBinding], *, timeout_ms: int | None = None
    ) -> dict[AclBinding, KafkaError | None]:
        request = pb.CreateAclsRequest(creations=[binding_message(b) for b in bindings])

        def send(address: str, timeout_s: float) -> pb.CreateAclsResponse:
            return pb_grpc.AdminStub(self._pool.get(address)).CreateAcls(request, timeout=timeout_s)

        response = self._to_any_broker("createAcls", send, timeout_ms)
        return {
            binding: _error(result.error_code, result.error_message)
            for binding, result in zip(bindings, response.results, strict=True)
        }

    def delete_acls(
        self, filters: Sequence[AclBindingFilter], *, timeout_ms: int | None = None
    ) -> dict[AclBindingFilter, list[AclBinding] | KafkaError]:
        """Per filter the bindings it deleted, or its error (a deletion that failed for one
        of its bindings is that binding's error)."""
        request = pb.DeleteAclsRequest(filters=[_pb_filter(f) for f in filters])

        def send(address: str, timeout_s: float) -> pb.DeleteAclsResponse:
            return pb_grpc.AdminStub(self._pool.get(address)).DeleteAcls(request, timeout=timeout_s)

        response = self._to_any_broker("deleteAcls", send, timeout_ms)
        results: dict[AclBindingFilter, list[AclBinding] | KafkaError] = {}
        for binding_filter, result in zip(filters, response.filter_results, strict=True):
            error = _error(result.error_code, result.error_message)
            for match in result.matching_acls:
                error = error or _error(match.error_code, match.error_message)
            results[binding_filter] = (
                error if error is not None else [_binding(m.acl) for m in result.matching_acls]
            )
        return results

    def _send_to_broker(
        self,
        broker_id: int,
        send: Callable[[str, float], pb.DescribeAclsResponse],
        timeout_ms: int | None,
    ) -> pb.DescribeAclsResponse:
        timeout_s = self._timeout(timeout_ms) / 1000
        node = self._cluster(refresh=False, timeout_s=timeout_s).brokers.get(broker_id)
        if node is None:
            node = self._cluster(refresh=True, timeout_s=timeout_s).brokers.get(broker_id)
        if node is None:
            raise error_for_code(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not alive")
        try:
            return send(node.address, timeout_s)
        except grpc.RpcError as exc:
            raise _rpc_error(exc) from None


def _pb_filter(binding_filter: AclBindingFilter) -> pb.AclBindingFilter:
    pattern, entry = binding_filter.pattern_filter, binding_filter.entry_filter
    return pb.AclBindingFilter(
        resource_type=pattern.resource_type,
        resource_name=pattern.name,
        pattern_type=pattern.pattern_type,
        principal=entry.principal,
        host=entry.host,
        operation=entry.operation,
        permission_type=entry.permission_type,
    )


_E = TypeVar("_E", ResourceType, PatternType, AclOperation, AclPermissionType)


def _known(enum_type: type[_E], value: int) -> _E:
    try:
        return enum_type(value)
    except ValueError:
        return enum_type(0)  # UNKNOWN: a code from a newer broker


def _binding(b: pb.AclBinding) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            _known(ResourceType, b.resource_type),
            b.resource_name,
            _known(PatternType, b.pattern_type),
        ),
        AccessControlEntry(
            b.principal,
            b.host,
            _known(AclOperation, b.operation),
            _known(AclPermissionType, b.permission_type),
        ),
    )
