"""Kafka's ``sasl.jaas.config``: one JAAS login module entry as a property value, parsed by the
one JAAS parser (proto/jaas.py, which the ZooKeeper login shares).

Kafka's brokers read the options they know: ``username`` and ``password`` (what the broker logs
in as, inter-broker) and, for PlainLoginModule, one ``user_<name>="<password>"`` per user the
listener accepts.

    >>> m = parse_single_login_module(
    ...     'org.apache.kafka.common.security.plain.PlainLoginModule required '
    ...     'username="admin" password="admin-secret" user_alice="alice-secret";',
    ...     "sasl.jaas.config")
    >>> m.options["username"], dict(plain_users(m))
    ('admin', {'alice': 'alice-secret'})

Errors (JaasConfigError, a ValueError) never quote the text: it holds passwords.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from minikafka.proto.jaas import JaasConfigError, JaasEntry, parse_jaas_entries

__all__ = [
    "PLAIN_LOGIN_MODULE",
    "SCRAM_LOGIN_MODULE",
    "JaasEntry",
    "parse_jaas_config",
    "parse_single_login_module",
    "plain_users",
]

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def plain_users(module: JaasEntry) -> Mapping[str, str]:
    """The users PlainLoginModule accepts on a listener: ``user_<name>`` -> password."""
    return MappingProxyType(
        {k[len("user_") :]: v for k, v in module.options.items() if k.startswith("user_")}
    )


def parse_jaas_config(text: str) -> tuple[JaasEntry, ...]:
    """Every login module entry in ``text``; JaasConfigError (without the text) when malformed
    or empty."""
    modules = parse_jaas_entries(text)
    if not modules:
        raise JaasConfigError("Invalid JAAS config: no login module")
    return modules


def parse_single_login_module(text: str, key: str) -> JaasEntry:
    """A ``sasl.jaas.config`` value, which Kafka requires to hold exactly one login module."""
    modules = parse_jaas_config(text)
    if len(modules) != 1:
        raise JaasConfigError(
            f"JAAS config property {key} contains {len(modules)} login modules, should be 1 module"
        )
    return modules[0]
