"""gRPC's TLS credentials for a listener, from its ListenerTls (broker/security/tls.py).

    server.add_secure_port(address, server_credentials(tls))     # an SSL/SASL_SSL listener
    transport.aio_channel(address, limit, credentials=channel_credentials(tls))  # to one

The server presents the listener's key store and, when ``ssl.client.auth`` is ``required``,
asks for a client certificate and checks it against the trust store. gRPC's Python server
has no "ask but do not require": ``requested`` is served as ``none`` there (no certificate is
asked for, calls are ANONYMOUS), and the broker says so in a warning when it starts; the Kafka
door honours ``requested``. A channel presents the broker's own certificate (mutual TLS
between brokers) and checks the other broker's against the trust store, host name included:
gRPC has no way to turn that check off, so ``ssl.endpoint.identification.algorithm=`` (empty)
changes nothing on gRPC connections (also a warning at startup).
"""

from __future__ import annotations

import grpc

from minikafka.broker.security.tls import ListenerTls

__all__ = ["channel_credentials", "server_credentials"]


def server_credentials(tls: ListenerTls) -> grpc.ServerCredentials:
    required = tls.config.client_auth == "required"
    return grpc.ssl_server_credentials(
        [(tls.key_store.key_pem, tls.key_store.chain_pem)],
        root_certificates=tls.trust_pem if required else None,
        require_client_auth=required,
    )


def channel_credentials(tls: ListenerTls) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=tls.trust_pem,
        private_key=tls.key_store.key_pem,
        certificate_chain=tls.key_store.chain_pem,
    )
