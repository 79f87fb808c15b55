"""PEM key stores and trust stores, read once for both the broker's listeners and the client.

Kafka's PEM key store (``ssl.keystore.type=PEM``, KIP-651) is one text holding a PKCS#8 private
key (``BEGIN PRIVATE KEY``, or ``BEGIN ENCRYPTED PRIVATE KEY`` with ``ssl.key.password``) and
the certificate chain, leaf first (``BEGIN CERTIFICATE`` blocks); a trust store is one or more
certificates. gRPC's credentials take an unencrypted key and the chain as bytes, so an encrypted
key is decrypted here, in memory (cryptography), and never written anywhere.

    store = read_key_store(Path("broker1.pem").read_bytes(), password=None, origin="broker1.pem")
    store.key_pem, store.chain_pem       # bytes for grpc.ssl_server_credentials
    read_certificates(Path("truststore.pem").read_bytes(), origin="truststore.pem")

Every failure is a ``PemError`` with a one-line message naming ``origin`` and saying what is wrong
(no key, no certificate, a garbled block, a wrong or missing password, a key that does not match
the certificate); the message never holds the key or the password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

__all__ = ["KeyStore", "PemError", "read_certificates", "read_key_store"]

_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.DOTALL)
_KEY_LABELS = (b"PRIVATE KEY", b"ENCRYPTED PRIVATE KEY", b"RSA PRIVATE KEY", b"EC PRIVATE KEY")


class PemError(ValueError):
    """A key store or trust store that cannot be used; the message is one line for the user."""


@dataclass(frozen=True)
class KeyStore:
    """A private key (unencrypted PKCS#8 PEM) and its certificate chain (PEM, leaf first)."""

    key_pem: bytes
    chain_pem: bytes
    certificate: x509.Certificate  # the leaf

    def __repr__(self) -> str:  # never the key
        return f"KeyStore(subject={self.certificate.subject.rfc4514_string()!r})"


def _blocks(data: bytes) -> list[tuple[bytes, bytes]]:
    return [(m.group(1), m.group(0)) for m in _BLOCK.finditer(data)]


def read_certificates(data: bytes, *, origin: str) -> list[x509.Certificate]:
    """Every certificate of a PEM text; PemError when there is none or one is garbled."""
    certificates = []
    for label, block in _blocks(data):
        if label != b"CERTIFICATE":
            continue
        try:
            certificates.append(x509.load_pem_x509_certificate(block))
        except ValueError:
            raise PemError(f"{origin}: a CERTIFICATE block is not a valid certificate") from None
    if not certificates:
        raise PemError(f"{origin}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it")
    return certificates


def read_key_store(data: bytes, *, password: str | None, origin: str) -> KeyStore:
    """The key and chain of a PEM key store; ``password`` decrypts an encrypted key."""
    keys = [block for label, block in _blocks(data) if label in _KEY_LABELS]
    if not keys:
        raise PemError(f"{origin}: no PEM private key (-----BEGIN PRIVATE KEY-----) in it")
    if len(keys) > 1:
        raise PemError(f"{origin}: more than one private key in it")
    certificates = read_certificates(data, origin=origin)
    key = _load_key(keys[0], password, origin)
    public = certificates[0].public_key()
    if key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ) != public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ):
        raise PemError(f"{origin}: the private key does not match the first certificate")
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    chain_pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates)
    return KeyStore(key_pem, chain_pem, certificates[0])


def _load_key(block: bytes, password: str | None, origin: str) -> PrivateKeyTypes:
    encrypted = block.startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----") or (
        b"Proc-Type: 4,ENCRYPTED" in block
    )
    if encrypted and not password:
        raise PemError(f"{origin}: the private key is encrypted and no ssl.key.password is set")
    try:
        return serialization.load_pem_private_key(
            block, password.encode() if encrypted and password else None
        )
    except ValueError:
        if encrypted:
            raise PemError(f"{origin}: wrong ssl.key.password for the private key") from None
        raise PemError(f"{origin}: the private key is not a valid PEM key") from None
    except TypeError:  # cryptography: a password for a key that has none, or the reverse
        raise PemError(f"{origin}: the private key is not encrypted as expected") from None
