"""The broker's SASL settings turned into what the doors use: each SASL listener's mechanisms
(with PLAIN's users from its JAAS config and SCRAM's from the credential cache) and the login
this broker's followers use on a SASL inter-broker listener.

The JAAS values are parsed here, at startup, rather than in BrokerConfig (the config layer sits
below broker/security, where the parser lives): a malformed one is InvalidConfigError naming
its key, never quoting its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from minikafka.broker.config import BrokerConfig
from minikafka.broker.security.sasl.jaas import JaasEntry, parse_single_login_module, plain_users
from minikafka.broker.security.sasl.scram import CredentialLookup
from minikafka.broker.security.sasl.server import SaslServerFactory
from minikafka.proto.common import EndPoint
from minikafka.proto.errors import InvalidConfigError
from minikafka.proto.sasl_channel import SaslCredentials

__all__ = ["SaslLogin", "grpc_broker_login", "inter_broker_login", "listener_sasl"]


@dataclass(frozen=True)
class SaslLogin:
    """What a broker logs in to another broker as."""

    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:
        return f"SaslLogin({self.mechanism!r}, {self.username!r}, password=...)"


def _jaas(config: BrokerConfig, listener: str, mechanism: str) -> JaasEntry | None:
    found = config.sasl_jaas_config_for(listener, mechanism)
    if found is None:
        return None
    key, value = found
    try:
        return parse_single_login_module(value, key)
    except ValueError as exc:
        raise InvalidConfigError(f"invalid value for configuration {key}: {exc}") from None


def listener_sasl(
    config: BrokerConfig, credentials: CredentialLookup
) -> dict[str, SaslServerFactory]:
    """Listener name -> its mechanisms, for every SASL listener, Kafka's and gRPC's (their
    names differ, so one map serves both doors)."""
    factories: dict[str, SaslServerFactory] = {}
    for endpoint in config.sasl_kafka_listeners() + config.sasl_grpc_listeners():
        name = endpoint.listener_name
        enabled = config.sasl_enabled_mechanisms_for(name)
        users: Mapping[str, str] = MappingProxyType({})
        if "PLAIN" in enabled:
            module = _jaas(config, name, "PLAIN")
            if module is not None:
                users = plain_users(module)
        factories[name] = SaslServerFactory(enabled, users, credentials)
    return factories


def inter_broker_login(config: BrokerConfig) -> SaslLogin | None:
    """The login followers use when inter.broker.listener.name is a SASL Kafka listener
    (``username`` and ``password`` of that listener's JAAS config); None otherwise."""
    return _broker_login(
        config, config.kafka_advertised_listeners, config.inter_broker_listener_name
    )


def grpc_broker_login(config: BrokerConfig, listener: str) -> SaslCredentials | None:
    """What this broker logs in to other brokers' gRPC ``listener`` as (the control plane
    listener for the controller's requests and controlled shutdown, the inter-broker one for
    the followers' fetches), when it is SASL_*; None otherwise."""
    login = _broker_login(config, config.advertised_listeners, listener)
    if login is None:
        return None
    return SaslCredentials(login.mechanism, login.username, login.password)


def _broker_login(
    config: BrokerConfig, endpoints: tuple[EndPoint, ...], listener: str
) -> SaslLogin | None:
    endpoint = next((e for e in endpoints if e.listener_name == listener), None)
    if endpoint is None or not endpoint.security_protocol.startswith("SASL_"):
        return None
    mechanism = config.sasl_mechanism_inter_broker_protocol
    module = _jaas(config, endpoint.listener_name, mechanism)
    username = module.options.get("username") if module is not None else None
    password = module.options.get("password") if module is not None else None
    if not username or password is None:
        raise InvalidConfigError(
            f"the JAAS config of listener {endpoint.listener_name} for {mechanism} needs "
            "username and password options (the broker's own login)"
        )
    return SaslLogin(mechanism, username, password)
