"""DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31), answered by the AclApi
(broker/server/core/acls.py) the gRPC door calls too; any broker answers them.

Versions 1-3 each (flexible from 2). Kafka 3.9 also serves version 0, which Kafka 4.0 removed
(KIP-896) and kio, generated from Kafka 4's schemas, cannot decode: ApiVersions advertises 1-3,
so a client picks 1 or newer, as every client since Kafka 2.0 (KIP-290 added version 1 and
its pattern types) does.
"""

from __future__ import annotations

from itertools import groupby

from minikafka.broker.server.core.acls import binding_from_wire, filter_from_wire
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity


@handler(api_key=29, min_version=1, max_version=3)
async def describe_acls(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    result = await broker.acls.describe_acls(
        request.session,
        filter_from_wire(
            body.resource_type_filter,
            body.resource_name_filter,
            body.pattern_type_filter,
            body.principal_filter,
            body.host_filter,
            body.operation,
            body.permission_type,
        ),
    )
    resources = [
        {
            "resource_type": int(pattern.resource_type),
            "resource_name": pattern.name,
            "pattern_type": int(pattern.pattern_type),
            "acls": [
                {
                    "principal": b.entry.principal,
                    "host": b.entry.host,
                    "operation": int(b.entry.operation),
                    "permission_type": int(b.entry.permission_type),
                }
                for b in bindings
            ],
        }
        for pattern, bindings in groupby(result.bindings, key=lambda b: b.pattern)
    ]
    return request.response(
        {
            "throttle_time": 0,
            "error_code": result.error.error_code,
            "error_message": result.error.error_message,
            "resources": resources,
        }
    )


@handler(api_key=30, min_version=1, max_version=3)
async def create_acls(request: Request, broker: KafkaBroker) -> Entity:
    bindings = [
        binding_from_wire(
            c.resource_type,
            c.resource_name,
            c.resource_pattern_type,
            c.principal,
            c.host,
            c.operation,
            c.permission_type,
        )
        for c in request.body.creations
    ]
    results = await broker.acls.create_acls(request.session, bindings)
    return request.response(
        {
            "throttle_time": 0,
            "results": [
                {"error_code": r.error_code, "error_message": r.error_message} for r in results
            ],
        }
    )


@handler(api_key=31, min_version=1, max_version=3)
async def delete_acls(request: Request, broker: KafkaBroker) -> Entity:
    filters = [
        filter_from_wire(
            f.resource_type_filter,
            f.resource_name_filter,
            f.pattern_type_filter,
            f.principal_filter,
            f.host_filter,
            f.operation,
            f.permission_type,
        )
        for f in request.body.filters
    ]
    results = await broker.acls.delete_acls(request.session, filters)
    return request.response(
        {
            "throttle_time": 0,
            "filter_results": [
                {
                    "error_code": r.error.error_code,
                    "error_message": r.error.error_message,
                    "matching_acls": [
                        {
                            "error_code": d.error.error_code,
                            "error_message": d.error.error_message,
                            "resource_type": int(d.binding.pattern.resource_type),
                            "resource_name": d.binding.pattern.name,
                            "pattern_type": int(d.binding.pattern.pattern_type),
                            "principal": d.binding.entry.principal,
                            "host": d.binding.entry.host,
                            "operation": int(d.binding.entry.operation),
                            "permission_type": int(d.binding.entry.permission_type),
                        }
                        for d in r.deleted
                    ],
                }
                for r in results
            ],
        }
    )
