"""How many Kafka connections the broker takes: ``max.connections`` and
``max.connections.per.ip`` (with ``max.connections.per.ip.overrides``), Kafka's ConnectionQuotas.

A connection from an address that already has its limit (the override for that address, else
``max.connections.per.ip``) is closed at once, as Kafka does. Over ``max.connections`` Kafka's
acceptor stops accepting until a connection closes, leaving new ones in the listen backlog;
here the new connection is closed at once instead (an asyncio server cannot pause accepting),
and the client connects again after its back-off, as it does after a refused one. Connections
on the inter-broker listener count towards ``max.connections`` but are never refused by it, as
in Kafka (which then closes another listener's least recently used connection; not done here).
Host names among the overrides are resolved once, when the listeners start, as Kafka does.

Owned by the broker's event loop.
"""

from __future__ import annotations

import ipaddress
import socket
from collections import Counter
from collections.abc import Mapping

import structlog

from minikafka.broker.config import BrokerConfig

__all__ = ["ConnectionQuotas"]

_log = structlog.get_logger(__name__)


class ConnectionQuotas:
    def __init__(self, config: BrokerConfig) -> None:
        self._max_connections = config.max_connections
        self._max_per_ip = config.max_connections_per_ip
        self._overrides = _resolved(config.max_connections_per_ip_overrides)
        self._inter_broker_listener = config.inter_broker_listener_name
        self._total = 0
        self._per_ip: Counter[str] = Counter()

    def inc(self, listener: str, host: str) -> str | None:
        """Count a new connection from ``host``; or, when it is over a limit, why it is refused
        (and it is not counted)."""
        address = _normal(host)
        limit = self._overrides.get(address, self._max_per_ip)
        if self._per_ip[address] >= limit:
            return f"address already has the configured maximum of {limit} connections"
        if self._total >= self._max_connections and listener != self._inter_broker_listener:
            return (
                f"broker already has the configured maximum of {self._max_connections} connections"
            )
        self._per_ip[address] += 1
        self._total += 1
        return None

    def dec(self, host: str) -> None:
        address = _normal(host)
        self._per_ip[address] -= 1
        if self._per_ip[address] <= 0:
            del self._per_ip[address]
        self._total -= 1

    def count(self, host: str) -> int:
        return self._per_ip[_normal(host)]


def _normal(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host.split("%", 1)[0]))
    except ValueError:
        return host.lower()


def _resolved(overrides: Mapping[str, int]) -> dict[str, int]:
    """The overrides by address: a host name stands for each address it resolves to."""
    result: dict[str, int] = {}
    for host, limit in overrides.items():
        try:
            result[str(ipaddress.ip_address(host))] = limit
            continue
        except ValueError:
            pass
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            _log.warning(
                "kafka.connection_override_unresolved",
                host=host,
                error=str(exc),
                config="max.connections.per.ip.overrides",
            )
            continue
        for info in infos:
            result[_normal(str(info[4][0]))] = limit
    return result
