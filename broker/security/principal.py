"""The principal a request is made as, and the session it arrives on.

Kafka's KafkaPrincipal is ``<type>:<name>``; the type is always ``User`` for the principals a
listener builds: the SASL user name, the TLS client certificate's subject after
``ssl.principal.mapping.rules``, or ``ANONYMOUS`` on a PLAINTEXT listener (and on an SSL listener
whose client sent no certificate). ACLs name principals the same way (``User:alice``, and
``User:*`` for every principal).

    >>> KafkaPrincipal.parse("User:alice")
    KafkaPrincipal(principal_type='User', name='alice')
    >>> str(ANONYMOUS)
    'User:ANONYMOUS'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANONYMOUS", "USER_TYPE", "KafkaPrincipal", "Session", "anonymous_session"]

USER_TYPE = "User"


@dataclass(frozen=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``User:alice`` -> KafkaPrincipal("User", "alice"); ValueError without a type."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(f"principal {text!r} is not of the form <type>:<name> (User:alice)")
        return cls(principal_type, name)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")


@dataclass(frozen=True)
class Session:
    """Who made a request and from where: what the authorizer is asked about.

    ``listener`` is the listener's name (a Kafka or a gRPC one) and ``security_protocol`` its
    protocol from ``listener.security.protocol.map`` (PLAINTEXT, SSL, SASL_PLAINTEXT,
    SASL_SSL). ``client_host`` is the peer's IP address, which ACLs match against their host.
    """

    principal: KafkaPrincipal
    client_host: str
    listener: str = ""
    security_protocol: str = "PLAINTEXT"


def anonymous_session(client_host: str, listener: str = "") -> Session:
    """The session of a PLAINTEXT connection."""
    return Session(ANONYMOUS, client_host, listener, "PLAINTEXT")
