"""ACL bindings as the gRPC messages carry them, written once for both sides: the AdminClient
sends them in CreateAcls, the broker answers them in DescribeAcls and DeleteAcls.

A module of its own, not proto/acl.py: the ACL values are also the broker's security layer's and
ZooKeeper access's, which import no protobuf.
"""

from __future__ import annotations

from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto.acl import AclBinding

__all__ = ["binding_message"]


def binding_message(binding: AclBinding) -> pb.AclBinding:
    return pb.AclBinding(
        resource_type=binding.pattern.resource_type,
        resource_name=binding.pattern.name,
        pattern_type=binding.pattern.pattern_type,
        principal=binding.entry.principal,
        host=binding.entry.host,
        operation=binding.entry.operation,
        permission_type=binding.entry.permission_type,
    )
