"""The broker image's HEALTHCHECK: is the broker on this container serving?

    python healthcheck.py [--config /etc/minikafka/server.properties] [--timeout 2]

Reads the broker's configuration as the broker does (the file, then ``KAFKA_*`` variables), asks
the broker's own gRPC control plane listener (control.plane.listener.name, by default the
inter-broker one) on this host for ``Metadata.DescribeCluster`` with a deadline (over TLS
when that listener is SSL: the broker's own key store and trust store, as the brokers' own
connections to it), and exits 0 when the broker answers without error, a controller is known,
and the broker sees itself among the live brokers (so the controller has registered it and sent it
metadata: it can take traffic). Otherwise it prints one line saying why and exits 1. A SASL
control plane listener is not probed (the healthcheck has no login): it says so and exits 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import grpc
import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.security.tls import ListenerTls
from minikafka.broker.server.grpc_tls import channel_credentials
from minikafka.proto import minikafka_pb2, minikafka_pb2_grpc
from minikafka.proto.errors import KafkaError

DEFAULT_CONFIG = "/etc/minikafka/server.properties"
_EVERY_INTERFACE = frozenset({"", "0.0.0.0", "::"})


def probe_address(config: BrokerConfig) -> str:
    """``host:port`` of the broker's gRPC control plane listener (the inter-broker one unless
    replication runs over a Kafka listener) as seen from its own container."""
    listener = next(e for e in config.listeners if e.listener_name == config.control_plane_listener)
    host = "127.0.0.1" if listener.host in _EVERY_INTERFACE else listener.host
    return f"[{host}]:{listener.port}" if ":" in host else f"{host}:{listener.port}"


def open_channel(config: BrokerConfig, address: str) -> grpc.Channel:
    """A channel to the control plane listener: plain, or TLS presenting the broker's own
    certificate (mutual TLS when the listener requires it). KafkaError when it is SASL or its
    key store cannot be read."""
    listener = config.listener_config(config.control_plane_listener)
    if listener.security_protocol.startswith("SASL_"):
        raise KafkaError(
            f"the control plane listener {listener.name} is {listener.security_protocol}: "
            "the healthcheck cannot log in (make it SSL or PLAINTEXT)"
        )
    if listener.security_protocol == "SSL":
        return grpc.secure_channel(address, channel_credentials(ListenerTls.load(listener)))
    return grpc.insecure_channel(address)


def check(config: BrokerConfig, timeout_s: float) -> str | None:
    """None when the broker serves, else the reason it does not."""
    address = probe_address(config)
    try:
        opened = open_channel(config, address)
    except KafkaError as e:
        return str(e)
    with opened as channel:
        stub = minikafka_pb2_grpc.MetadataStub(channel)
        try:
            response = stub.DescribeCluster(
                minikafka_pb2.DescribeClusterRequest(), timeout=timeout_s
            )
        except grpc.RpcError as e:
            return f"DescribeCluster on {address}: {e.code().name} {e.details()}"
    if response.error_code != 0:
        return f"DescribeCluster on {address}: error {response.error_code} {response.error_message}"
    if response.controller_id < 0:
        return f"broker {config.broker_id} knows no controller yet"
    live = sorted(b.broker_id for b in response.brokers)
    if config.broker_id not in live:
        return f"broker {config.broker_id} is not among the live brokers it knows ({live})"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="the broker's server.properties")
    parser.add_argument("--timeout", type=float, default=2.0, help="RPC deadline in seconds")
    args = parser.parse_args(argv)
    # BrokerConfig warns about unknown keys; the broker's own log already says so.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    try:
        config = BrokerConfig.load(args.config)
    except (OSError, KafkaError) as e:
        print(f"unhealthy: cannot read the broker's configuration: {e}")
        return 1
    reason = check(config, args.timeout)
    if reason is not None:
        print(f"unhealthy: {reason}")
        return 1
    print(f"healthy: broker {config.broker_id} serves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
