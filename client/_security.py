"""A client's security settings, Kafka's client keys as librdkafka spells them, in one value.

    security = ClientSecurity.from_config({
        "security.protocol": "SSL",
        "ssl.ca.location": "certs/truststore.pem",
        "ssl.certificate.location": "certs/alice.crt",   # mTLS: the client's certificate
        "ssl.key.location": "certs/alice.key",
    })
    Producer("127.0.0.1:9093", security=security)         # or security={...} as above

Keys::

    security.protocol                      PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
    ssl.ca.location                        PEM file of the CAs the broker's certificate is
                                           checked against (unset: the system's roots)
    ssl.certificate.location               PEM file: the client's certificate (chain)
    ssl.key.location                       PEM file: its private key (may hold the chain too)
    ssl.key.password                       the key's password, if it is encrypted
    ssl.endpoint.identification.algorithm  https (default): the broker's certificate must name
                                           the host dialled. gRPC always checks it, so ``none``
                                           is refused with a message rather than ignored.

    sasl.mechanism                         with SASL_*: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
                                           (librdkafka's spelling sasl.mechanisms too; Kafka's
                                           default GSSAPI is not supported)
    sasl.username, sasl.password           who to log in as (librdkafka's keys; a Java
                                           client's sasl.jaas.config is not read)

With SASL_PLAINTEXT or SASL_SSL the client logs in to each broker over the Security RPCs
(proto/sasl_channel.py) and sends the token it gets with every call. Files are read
when ``channel_credentials`` is called (a client's start), so a missing or garbled file is an
InvalidConfigError naming the key, before any connection is tried. Immutable; thread-safe.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import grpc

from minikafka.proto.errors import InvalidConfigError
from minikafka.proto.pem import PemError, read_certificates, read_key_store
from minikafka.proto.sasl_channel import SaslCredentials
from minikafka.proto.sasl_client import SUPPORTED_MECHANISMS as SASL_MECHANISMS

__all__ = ["SECURITY_PROTOCOLS", "ClientSecurity"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ClientSecurity:
    security_protocol: str = "PLAINTEXT"
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    ssl_endpoint_identification_algorithm: str = "https"
    sasl_mechanism: str = "GSSAPI"
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)

    # Kafka's key -> the field it sets.
    KEYS: ClassVar[Mapping[str, str]] = {
        "security.protocol": "security_protocol",
        "ssl.ca.location": "ssl_ca_location",
        "ssl.certificate.location": "ssl_certificate_location",
        "ssl.key.location": "ssl_key_location",
        "ssl.key.password": "ssl_key_password",
        "ssl.endpoint.identification.algorithm": "ssl_endpoint_identification_algorithm",
        "sasl.mechanism": "sasl_mechanism",
        "sasl.mechanisms": "sasl_mechanism",
        "sasl.username": "sasl_username",
        "sasl.password": "sasl_password",
    }

    def __post_init__(self) -> None:
        protocol = self.security_protocol.strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise InvalidConfigError(
                f"Invalid value {self.security_protocol} for configuration security.protocol: "
                f"must be one of {', '.join(SECURITY_PROTOCOLS)}"
            )
        object.__setattr__(self, "security_protocol", protocol)
        algorithm = self.ssl_endpoint_identification_algorithm.strip().lower()
        if algorithm not in ("https", "", "none"):
            raise InvalidConfigError(
                f"Invalid value {self.ssl_endpoint_identification_algorithm} for configuration "
                "ssl.endpoint.identification.algorithm: must be https or none"
            )
        if algorithm != "https" and self.uses_tls:
            raise InvalidConfigError(
                f"Invalid value {self.ssl_endpoint_identification_algorithm} for configuration "
                "ssl.endpoint.identification.algorithm: gRPC always checks that the broker's "
                "certificate names the host dialled, so only https is supported"
            )
        if self.uses_sasl:
            self._check_sasl()
        if self.ssl_certificate_location is not None and self.ssl_key_location is None:
            raise InvalidConfigError(
                "ssl.certificate.location is set without ssl.key.location: a client "
                "certificate needs its private key"
            )

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> ClientSecurity:
        """From Kafka-named keys; keys that are not security keys are ignored."""
        values = {cls.KEYS[k]: v for k, v in config.items() if k in cls.KEYS}
        return cls(**values)

    @classmethod
    def of(cls, security: ClientSecurity | Mapping[str, str] | None) -> ClientSecurity:
        """What a client's ``security=`` argument means: a value, Kafka-named keys or none."""
        if security is None:
            return cls()
        if isinstance(security, ClientSecurity):
            return security
        unknown = sorted(k for k in security if k not in cls.KEYS)
        if unknown:
            raise InvalidConfigError(f"unknown security configuration {unknown[0]!r}")
        return cls.from_config(security)

    def replace(self, **changes: str | None) -> ClientSecurity:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def _check_sasl(self) -> None:
        mechanism = self.sasl_mechanism.strip().upper()
        if mechanism not in SASL_MECHANISMS:
            raise InvalidConfigError(
                f"Invalid value {self.sasl_mechanism} for configuration sasl.mechanism: "
                f"must be one of {', '.join(SASL_MECHANISMS)} with security.protocol "
                f"{self.security_protocol}"
            )
        object.__setattr__(self, "sasl_mechanism", mechanism)
        for key, value in (
            ("sasl.username", self.sasl_username),
            ("sasl.password", self.sasl_password),
        ):
            if not value:
                raise InvalidConfigError(
                    f"{key} must be set with security.protocol {self.security_protocol}"
                )

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def sasl_credentials(self) -> SaslCredentials | None:
        """Who to log in to brokers as; None without SASL."""
        if not self.uses_sasl:
            return None
        assert self.sasl_username is not None and self.sasl_password is not None
        return SaslCredentials(self.sasl_mechanism, self.sasl_username, self.sasl_password)

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    def channel_credentials(self) -> grpc.ChannelCredentials | None:
        """gRPC's channel credentials for this protocol; None for a plaintext one."""
        if not self.uses_tls:
            return None
        roots = None
        if self.ssl_ca_location is not None:
            data = _read("ssl.ca.location", self.ssl_ca_location)
            try:
                read_certificates(data, origin=self.ssl_ca_location)
            except PemError as exc:
                raise InvalidConfigError(f"ssl.ca.location: {exc}") from None
            roots = data
        key = chain = None
        if self.ssl_key_location is not None:
            data = _read("ssl.key.location", self.ssl_key_location)
            if self.ssl_certificate_location is not None:
                data += b"\n" + _read("ssl.certificate.location", self.ssl_certificate_location)
            try:
                store = read_key_store(
                    data, password=self.ssl_key_password, origin=self.ssl_key_location
                )
            except PemError as exc:
                raise InvalidConfigError(f"ssl.key.location: {exc}") from None
            key, chain = store.key_pem, store.chain_pem
        return grpc.ssl_channel_credentials(
            root_certificates=roots, private_key=key, certificate_chain=chain
        )


def _read(key: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise InvalidConfigError(f"{key}: cannot read {location}: {exc.strerror}") from None
