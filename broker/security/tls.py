"""TLS for a listener: its key store and trust store read once, the ``ssl.SSLContext`` of its
server side and of the broker's own connections to it, and the principal a peer's certificate
stands for.

    tls = ListenerTls.load(config.listener_config("SSL"))   # InvalidConfigError: one line
    server = await asyncio.start_server(..)  +  writer.start_tls(tls.server_context())
    principal = tls.principal(ssl_object.getpeercert(binary_form=True))   # User:alice

The principal is Kafka's: the certificate's subject as Java's ``X500Principal.getName()``
writes it (RFC 2253; see ``x500_name``), mapped by ``ssl.principal.mapping.rules`` (see
``SslPrincipalMapper``) to ``User:<name>``. No certificate (ssl.client.auth none or requested)
is ANONYMOUS.

Plain ``ssl`` only: the gRPC door builds its credentials from the same ``ListenerTls`` (the key
and chain as PEM bytes, the trust store's PEM) in broker/server. Immutable once loaded;
contexts are made per call and may be used from any thread.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import ssl
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from minikafka.broker.config import ListenerConfig, SslConfig
from minikafka.broker.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from minikafka.proto.errors import InvalidConfigError
from minikafka.proto.pem import KeyStore, PemError, read_certificates, read_key_store

__all__ = [
    "ListenerTls",
    "NoMatchingRule",
    "SslPrincipalMapper",
    "x500_name",
]


# --- the subject as Java's X500Principal.getName() (RFC 2253) ----------------------------------

# The attribute types RFC 2253 names by keyword (Java's rfc2253 keywords); any other type is
# written as its dotted OID with the value as ``#`` and the hex of its DER encoding.
_RFC2253_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
# DER string types Java writes as text: UTF8String, PrintableString, T61String, IA5String,
# GeneralString and BMPString (its isDerString); any other is written as hex.
_TEXT_TAGS = {12: "utf-8", 19: "utf-8", 20: "utf-8", 22: "utf-8", 27: "utf-8", 30: "utf-16-be"}
_ESCAPED = set(',=+<>#;"\\')


def _der(data: bytes, position: int) -> tuple[int, int, int]:
    """(tag, start of the content, end of the content) of the DER element at ``position``."""
    tag = data[position]
    length = data[position + 1]
    start = position + 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[start : start + count], "big")
        start += count
    if start + length > len(data):
        raise ValueError("truncated DER")
    return tag, start, start + length


def _children(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(tag, content start, content end, element start) of each element in ``[start, end)``."""
    position = start
    while position < end:
        tag, content, after = _der(data, position)
        yield tag, content, after, position
        position = after


def _oid(content: bytes) -> str:
    """A DER OBJECT IDENTIFIER's content as dotted text (base-128 arcs; the first byte holds
    the first two arcs, 40 * a + b)."""
    top = min(content[0] // 40, 2)
    arcs = [top, content[0] - 40 * top]
    value = 0
    for byte in content[1:]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    return ".".join(str(a) for a in arcs)


def _escape(text: str) -> str:
    out = "".join(f"\\{c}" if c in _ESCAPED else "\\00" if c == "\0" else c for c in text)
    # Leading and trailing spaces are escaped (each one, as Java does).
    stripped = out.lstrip(" ")
    lead = len(out) - len(stripped)
    body = stripped.rstrip(" ")
    trail = len(stripped) - len(body)
    return "\\ " * lead + body + "\\ " * trail


def x500_name(subject_der: bytes) -> str:
    """The distinguished name (DER ``Name``) as ``X500Principal.getName()`` writes it: the
    RDNs last to first, joined by ``,``; the attributes of a multi-valued RDN joined by ``+``
    in their encoded order; keyword=value with ``,=+<>#;"\\`` and leading/trailing spaces
    escaped by a backslash; other types as ``1.2.840.113549.1.9.1=#16...`` (OID, then the
    value's DER in lower-case hex).

    >>> from cryptography.x509 import Name, NameAttribute
    >>> from cryptography.x509.oid import NameOID
    >>> x500_name(Name([NameAttribute(NameOID.COUNTRY_NAME, "US"),
    ...                 NameAttribute(NameOID.COMMON_NAME, "alice")]).public_bytes())
    'CN=alice,C=US'
    """
    tag, start, end = _der(subject_der, 0)
    if tag != 0x30:
        raise ValueError("a Name is a DER SEQUENCE")
    rdns: list[str] = []
    for _, set_start, set_end, _ in _children(subject_der, start, end):
        values: list[str] = []
        for _, ava_start, ava_end, _ in _children(subject_der, set_start, set_end):
            oid_element, value_element = list(_children(subject_der, ava_start, ava_end))[:2]
            _, oid_start, oid_end, _ = oid_element
            value_tag, v_start, v_end, v_at = value_element
            oid = _oid(subject_der[oid_start:oid_end])
            keyword = _RFC2253_KEYWORDS.get(oid)
            encoding = _TEXT_TAGS.get(value_tag)
            if keyword is None or encoding is None:
                values.append(f"{keyword or oid}=#{subject_der[v_at:v_end].hex()}")
            else:
                text = subject_der[v_start:v_end].decode(encoding, errors="replace")
                values.append(f"{keyword}={_escape(text)}")
        rdns.append("+".join(values))
    return ",".join(reversed(rdns))


# --- ssl.principal.mapping.rules ---------------------------------------------------------------

# Kafka's grammar: DEFAULT, or RULE:pattern/replacement/ with an optional L or U, where a
# pattern or replacement may hold an escaped ``/``; rules are separated by commas (a comma
# inside a pattern is kept: the split only takes a comma after a whole rule).
_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_RULE_PARSER = re.compile(_RULE)


class NoMatchingRule(ValueError):
    """No rule maps the name: the connection is refused (Kafka's NoMatchingRule)."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT, the name as it is
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(lambda m: _java_replacement(self.replacement, m), name)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result

    def __str__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.pattern.pattern}/{self.replacement}" + (
            f"/{self.case}" if self.case else ""
        )


def _java_replacement(template: str, match: re.Match[str]) -> str:
    """``Matcher.replaceAll``'s replacement: ``$n`` is group n (digits taken while they name a
    group), ``\\c`` is ``c``; a ``$n`` past the last group is kept as text (Kafka escapes
    those before replacing)."""
    groups = match.re.groups
    out: list[str] = []
    i = 0
    while i < len(template):
        c = template[i]
        if c == "\\" and i + 1 < len(template):
            out.append(template[i + 1])
            i += 2
        elif c == "$" and i + 1 < len(template) and template[i + 1].isdigit():
            j = i + 2
            number = int(template[i + 1])
            if number > groups:
                out.append(template[i : i + 2])
                i += 2
                continue
            while j < len(template) and template[j].isdigit():
                longer = number * 10 + int(template[j])
                if longer > groups:
                    break
                number, j = longer, j + 1
            out.append(match.group(number) or "")
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules``: the first rule whose pattern matches the whole
    distinguished name gives the name (Kafka's SslPrincipalMapper).

    >>> mapper = SslPrincipalMapper.from_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT")
    >>> mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US")
    'duke'
    >>> mapper.name("CN=alice,OU=eng,O=acme,C=US")
    'CN=alice,OU=eng,O=acme,C=US'
    """

    def __init__(self, rules: Sequence[_Rule]) -> None:
        self._rules = tuple(rules)

    @classmethod
    def from_rules(cls, text: str) -> SslPrincipalMapper:
        """Parse the rules; InvalidConfigError naming the bad one."""
        rules: list[_Rule] = []
        for found in _RULE_SPLITTER.finditer(text.strip()):
            rule = found.group(1)
            parsed = _RULE_PARSER.match(rule)
            if parsed is None or parsed.end() != len(rule):
                unmatched = rule if parsed is None else rule[parsed.end() :]
                raise InvalidConfigError(
                    f"invalid value for configuration ssl.principal.mapping.rules: invalid "
                    f"rule {rule!r}, unmatched {unmatched!r}"
                )
            if parsed.group(1) is not None:
                rules.append(_Rule(None))
            elif parsed.group(2) is not None:
                try:
                    pattern = re.compile(parsed.group(2))
                except re.error as exc:
                    raise InvalidConfigError(
                        f"invalid value for configuration ssl.principal.mapping.rules: rule "
                        f"{rule!r} has a bad pattern: {exc}"
                    ) from None
                rules.append(_Rule(pattern, parsed.group(3), parsed.group(4)))
            elif parsed.group(5):
                raise InvalidConfigError(
                    f"invalid value for configuration ssl.principal.mapping.rules: invalid "
                    f"rule {rule!r}"
                )
        return cls(rules)

    def name(self, distinguished_name: str) -> str:
        for rule in self._rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise NoMatchingRule("no rule of ssl.principal.mapping.rules applies to the name")

    def __repr__(self) -> str:
        return f"SslPrincipalMapper(rules = [{', '.join(str(r) for r in self._rules)}])"


# --- a listener's TLS ----------------------------------------------------------------------------

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


@dataclass(frozen=True, eq=False)
class ListenerTls:
    """A TLS listener's material, read and checked once (``load``). Compared and hashed by
    identity: one per listener."""

    listener: str
    config: SslConfig
    key_store: KeyStore
    trust_pem: bytes | None = field(repr=False)  # None: the system's CAs
    mapper: SslPrincipalMapper = field(repr=False)

    @classmethod
    def load(cls, listener: ListenerConfig) -> ListenerTls:
        """Read the listener's key store and trust store and parse its mapping rules;
        InvalidConfigError with a one-line message naming the key otherwise."""
        config = listener.ssl
        prefix = f"listener {listener.name}"
        if config.keystore_location is not None:
            data = _read(prefix, "ssl.keystore.location", config.keystore_location)
            origin = f"{prefix}: ssl.keystore.location {config.keystore_location}"
        elif config.keystore_key is not None and config.keystore_certificate_chain is not None:
            data = (config.keystore_key + "\n" + config.keystore_certificate_chain).encode()
            origin = f"{prefix}: ssl.keystore.key"
        else:
            raise InvalidConfigError(f"{prefix}: no key store: set ssl.keystore.location")
        try:
            key_store = read_key_store(data, password=config.key_password, origin=origin)
        except PemError as exc:
            raise InvalidConfigError(str(exc)) from None
        trust: bytes | None = None
        if config.truststore_location is not None:
            trust = _read(prefix, "ssl.truststore.location", config.truststore_location)
            origin = f"{prefix}: ssl.truststore.location {config.truststore_location}"
        elif config.truststore_certificates is not None:
            trust = config.truststore_certificates.encode()
            origin = f"{prefix}: ssl.truststore.certificates"
        if trust is not None:
            try:
                certificates = read_certificates(trust, origin=origin)
            except PemError as exc:
                raise InvalidConfigError(str(exc)) from None
            # Only the certificates: ssl's cadata refuses text around the PEM blocks.
            trust = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates)
        if config.client_auth != "none" and trust is None:
            raise InvalidConfigError(
                f"{prefix}: ssl.client.auth={config.client_auth} needs a trust store to check "
                "client certificates against: set ssl.truststore.location"
            )
        mapper = SslPrincipalMapper.from_rules(config.principal_mapping_rules)
        tls = cls(listener.name, config, key_store, trust, mapper)
        tls.server_context()  # the ciphers and versions are checked here too
        return tls

    def server_context(self) -> ssl.SSLContext:
        """The context of the listener's accepted connections: one for all of them."""
        return self._server_context

    @functools.cached_property
    def _server_context(self) -> ssl.SSLContext:
        # Built once (by ``load``): building one re-encrypts the key for load_cert_chain, a
        # couple of hundred ms of the broker's event loop, which every handshake paid while
        # each connection built its own (bench.kafka_protocol_bench's connection setup cost).
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._common(context)
        context.verify_mode = _CLIENT_AUTH[self.config.client_auth]
        return context

    def client_context(self) -> ssl.SSLContext:
        """The context of this broker's connections to the listener on another broker: its
        own certificate (mutual TLS), the trust store, and the host name check unless
        ``ssl.endpoint.identification.algorithm`` is empty."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self._common(context)
        context.check_hostname = self.config.endpoint_identification_algorithm == "https"
        context.verify_mode = ssl.CERT_REQUIRED
        if self.trust_pem is None:
            context.load_default_certs()
        return context

    def principal(self, peer_certificate_der: bytes | None) -> KafkaPrincipal:
        """The principal of a peer that presented this certificate (None: it sent none).
        NoMatchingRule when no mapping rule applies."""
        if peer_certificate_der is None:
            return ANONYMOUS
        certificate = x509.load_der_x509_certificate(peer_certificate_der)
        return self.principal_of(certificate)

    def principal_of(self, certificate: x509.Certificate) -> KafkaPrincipal:
        name = x500_name(certificate.subject.public_bytes())
        return KafkaPrincipal(USER_TYPE, self.mapper.name(name))

    def _common(self, context: ssl.SSLContext) -> None:
        versions = [_VERSIONS[v] for v in self.config.enabled_protocols]
        context.minimum_version = min(versions)
        context.maximum_version = max(versions)
        if self.trust_pem is not None:
            context.load_verify_locations(cadata=self.trust_pem.decode())
        with _KeyFile(self.key_store) as (path, password):
            context.load_cert_chain(path, password=password)
        ciphers = _openssl_ciphers(self.config.cipher_suites)
        if ciphers:
            try:
                context.set_ciphers(":".join(ciphers))
            except ssl.SSLError:
                raise InvalidConfigError(
                    f"listener {self.listener}: no cipher of ssl.cipher.suites "
                    f"({','.join(self.config.cipher_suites)}) is available"
                ) from None


def _read(prefix: str, key: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise InvalidConfigError(
            f"{prefix}: {key}: cannot read {location}: {exc.strerror}"
        ) from None


class _KeyFile:
    """The key store as a file for ``load_cert_chain`` (which reads files only): the key
    encrypted with a one-time password, in a private directory (mode 0700) of this process,
    removed as soon as it has been read. The key is never on disk unencrypted."""

    def __init__(self, key_store: KeyStore) -> None:
        self._key_store = key_store
        self._dir = ""

    def __enter__(self) -> tuple[str, str]:
        password = secrets.token_urlsafe(24)
        key = serialization.load_pem_private_key(self._key_store.key_pem, None)
        encrypted = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(password.encode()),
        )
        self._dir = tempfile.mkdtemp(prefix="minikafka-tls-")
        path = os.path.join(self._dir, "keystore.pem")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(encrypted + self._key_store.chain_pem)
        return path, password

    def __exit__(self, *exc_info: object) -> None:
        path = os.path.join(self._dir, "keystore.pem")
        if os.path.exists(path):
            os.unlink(path)
        os.rmdir(self._dir)


def _openssl_ciphers(suites: Sequence[str]) -> list[str]:
    """Kafka's (IANA) TLS 1.2 suite names as OpenSSL names
    (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 -> ECDHE-RSA-AES128-GCM-SHA256); OpenSSL names pass
    as they are. TLS 1.3 suites (TLS_AES_128_GCM_SHA256, ...) are left out: Python's ssl cannot
    narrow them, so TLS 1.3 always offers OpenSSL's."""
    names = []
    for suite in suites:
        if not suite.startswith("TLS_"):
            names.append(suite)
            continue
        if "_WITH_" not in suite:
            continue  # a TLS 1.3 suite
        exchange, _, cipher = suite[len("TLS_") :].partition("_WITH_")
        cipher = re.sub(r"AES_(\d+)", r"AES\1", cipher).replace(
            "CHACHA20_POLY1305", "CHACHA20-POLY1305"
        )
        name = f"{exchange}-{cipher}".replace("_", "-")
        names.append(
            name.removeprefix("RSA-")
        )  # TLS_RSA_WITH_AES_128_GCM_SHA256 -> AES128-GCM-SHA256
    return names
