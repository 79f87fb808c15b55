"""DescribeConfigs (key 32), AlterConfigs (key 33) and IncrementalAlterConfigs (key 44), answered
by the TopicAdmin calls (broker/server/core/configs.py) the gRPC door makes; any broker answers
them.

Resources: TOPIC (2) and BROKER (4). Any other type (BROKER_LOGGER 8, CLIENT_METRICS, GROUP)
is INVALID_REQUEST "Unsupported resource type", Kafka's answer for a type it does not serve.
A topic resource of a missing topic is UNKNOWN_TOPIC_OR_PARTITION.

Versions:
- DescribeConfigs 1-4. Null or empty ``configuration_keys`` means every key. Topic keys are the
  ones this broker acts on (see core/configs.py), each with its source (DYNAMIC_TOPIC_CONFIG for
  an override, STATIC_BROKER_CONFIG or DEFAULT_CONFIG for the broker key that gives its
  default); broker keys carry their source (dynamic per broker, dynamic cluster default,
  static, default) and are read-only unless they can change at run time. An empty broker
  name describes the cluster-wide dynamic defaults. ``include_synonyms`` lists, highest
  precedence first, the topic override, then the broker key's dynamic values and its static
  one (a Kafka default beneath a value set in server.properties is not listed). ``config_type``
  (v3+) is the key's type in Kafka's ConfigDef (UNKNOWN for keys Kafka lacks). Nothing is
  sensitive. ``include_documentation`` is accepted, but documentation is always null.
- AlterConfigs 0-2 sets a topic's whole override set: keys it leaves out go back to their
  defaults, and a key sent with a null value counts as left out (as in Kafka). It runs
  TopicAdmin's incremental path in replace mode (``alter_configs``), so validation is the same.
- IncrementalAlterConfigs 0-1: SET, DELETE, and APPEND/SUBTRACT for list keys
  (``cleanup.policy``; other keys INVALID_CONFIG); an unknown operation, or SET without a
  value, is INVALID_REQUEST. Unknown keys and bad values are INVALID_CONFIG.
A BROKER resource (an id, or an empty name for the cluster-wide default) alters the dynamic
broker configs; a key that needs a restart is INVALID_REQUEST "Cannot update these configs
dynamically", as Kafka answers. ``validate_only`` checks without writing.
"""

from __future__ import annotations

from typing import Any

from minikafka.broker.config import CONFIG_TYPES
from minikafka.broker.server.core.configs import (
    AlterableConfig,
    AlterConfigsResource,
    AlterConfigsResult,
    ConfigOperation,
    ConfigResource,
)
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.registry import Request, handler
from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.topic_config import ConfigType


@handler(api_key=32, min_version=1, max_version=4)
async def describe_configs(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    answer = await broker.admin.describe_configs(
        [
            ConfigResource(r.resource_type, r.resource_name, tuple(r.configuration_keys or ()))
            for r in body.resources
        ],
        session=request.session,
    )
    results = []
    for result in answer:
        configs = []
        for entry in result.configs:
            synonyms = (
                [
                    {"name": y.name, "value": y.value, "source": int(y.source)}
                    for y in entry.synonyms
                ]
                if body.include_synonyms
                else []
            )
            configs.append(
                {
                    "name": entry.name,
                    "value": entry.value,
                    "read_only": entry.read_only,
                    "config_source": int(entry.source),
                    "is_sensitive": entry.is_sensitive,
                    "synonyms": synonyms,
                    "config_type": int(CONFIG_TYPES.get(entry.name, ConfigType.UNKNOWN)),
                    "documentation": None,
                }
            )
        results.append(
            {
                "error_code": result.error_code,
                "error_message": result.error_message or None,
                "resource_type": result.resource_type,
                "resource_name": result.resource_name,
                "configs": configs,
            }
        )
    return request.response({"throttle_time": 0, "results": results})


@handler(api_key=33, min_version=0, max_version=2)
async def alter_configs(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    # Every key given becomes a SET on an empty override set; null values are left out, as
    # Kafka drops them before it replaces the topic's config.
    answer = await broker.admin.alter_configs(
        [
            AlterConfigsResource(
                r.resource_type,
                r.resource_name,
                [
                    AlterableConfig(c.name, ConfigOperation.SET, c.value)
                    for c in r.configs
                    if c.value is not None
                ],
            )
            for r in body.resources
        ],
        validate_only=body.validate_only,
        session=request.session,
    )
    return request.response({"throttle_time": 0, "responses": _alter_results(answer)})


@handler(api_key=44, min_version=0, max_version=1)
async def incremental_alter_configs(request: Request, broker: KafkaBroker) -> Entity:
    body = request.body
    answer = await broker.admin.incremental_alter_configs(
        [
            AlterConfigsResource(
                r.resource_type,
                r.resource_name,
                [AlterableConfig(c.name, c.config_operation, c.value) for c in r.configs],
            )
            for r in body.resources
        ],
        validate_only=body.validate_only,
        session=request.session,
    )
    return request.response({"throttle_time": 0, "responses": _alter_results(answer)})


def _alter_results(answer: list[AlterConfigsResult]) -> list[dict[str, Any]]:
    return [
        {
            "error_code": r.error_code,
            "error_message": r.error_message or None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
        }
        for r in answer
    ]
