"""Who a broker is to ZooKeeper, and what the znodes it creates allow.

As Kafka in ZooKeeper mode (JaasUtils.isZkSaslEnabled, KafkaServer's check of
``zookeeper.set.acl``, ZkData.defaultAcls), over ZooKeeper's SASL DIGEST-MD5 through kazoo.
The login comes the way a Kafka operator gives it to the JVM: a JAAS file named by a system
property in ``KAFKA_OPTS``, with a ``Client`` section::

    KAFKA_OPTS="-Djava.security.auth.login.config=/etc/kafka/kafka_server_jaas.conf"

    Client {
        org.apache.zookeeper.server.auth.DigestLoginModule required
        username="kafka"
        password="kafka-secret";
    };

The system properties read (``-Dkey=value`` in ``KAFKA_OPTS``; Kafka has no broker key for
this, only these JVM properties)::

    java.security.auth.login.config  the JAAS file; unset: no SASL to ZooKeeper
    zookeeper.sasl.clientconfig      the section to log in with (default Client); named and
                                     missing from the file: an error, as ZooKeeper's client
    zookeeper.sasl.client            true (default): log in when the section exists; false while
                                     it exists: an error, as Kafka's JaasUtils
    zookeeper.sasl.client.username   ZooKeeper's SASL service name (default zookeeper)

Only DIGEST-MD5 (ZooKeeper's DigestLoginModule) is supported; a Kerberos section is refused.

``zookeeper.set.acl=true`` needs that login (the broker refuses to start without it, as Kafka
does); every znode a broker or the controller then creates gets ``default_acls(path)``: its
creator (ZooKeeper's ``auth`` scheme, which the server turns into ``sasl:<username>``) ALL,
and anyone READ except under Kafka's sensitive paths (zk_data.SENSITIVE_ROOT_PATHS:
/config/users, /config/brokers, /delegation_token). So every broker must log in as the same
user, as Kafka's documentation requires: each writes znodes that others created. Znodes that
already exist keep the ACLs they have (Kafka's zookeeper-security-migration is not here).

    security = zk_client_security_from_environ(os.environ, set_acl=config.zookeeper_set_acl)
    store = ZkStore.connect(config.zookeeper_connect, security=security)

Nothing here logs, and no message or repr carries a password.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from minikafka.proto.jaas import JaasConfigError, JaasEntry, parse_jaas_file
from minikafka.zk.errors import ZkSecurityConfigError
from minikafka.zk.zk_data import is_sensitive_path

__all__ = [
    "DIGEST_LOGIN_MODULE",
    "NO_SECURITY",
    "ZkClientSecurity",
    "ZkSaslCredentials",
    "default_acls",
    "jvm_system_properties",
    "zk_client_security",
    "zk_client_security_from_environ",
]

DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"

LOGIN_CONFIG_PROPERTY = "java.security.auth.login.config"
SASL_CLIENT_PROPERTY = "zookeeper.sasl.client"
SASL_CLIENT_CONFIG_PROPERTY = "zookeeper.sasl.clientconfig"
SASL_SERVICE_PROPERTY = "zookeeper.sasl.client.username"
DEFAULT_SECTION = "Client"
DEFAULT_SERVICE = "zookeeper"


@dataclass(frozen=True)
class ZkSaslCredentials:
    """A DIGEST-MD5 login to ZooKeeper; the repr leaves the password out."""

    username: str
    password: str = field(repr=False)
    service: str = DEFAULT_SERVICE

    def kazoo_sasl_options(self) -> dict[str, str]:
        """kazoo's ``sasl_options`` (pure-sasl does the DIGEST-MD5 exchange)."""
        return {
            "mechanism": "DIGEST-MD5",
            "username": self.username,
            "password": self.password,
            "service": self.service,
        }


@dataclass(frozen=True)
class ZkClientSecurity:
    """How a ZkStore logs in and which ACLs the znodes it creates get.

    ``set_acl`` without ``sasl`` is refused (ZkSecurityConfigError), as Kafka refuses
    zookeeper.set.acl=true without a secure ZooKeeper client.
    """

    sasl: ZkSaslCredentials | None = None
    set_acl: bool = False

    def __post_init__(self) -> None:
        if self.set_acl and self.sasl is None:
            raise ZkSecurityConfigError(
                "zookeeper.set.acl is true, but the broker has no SASL login to ZooKeeper: "
                f"give a JAAS file with a {DEFAULT_SECTION} section "
                f"(-D{LOGIN_CONFIG_PROPERTY}=<file> in KAFKA_OPTS)"
            )

    def acls(self, path: str) -> list[ACL]:
        """The ACLs of a znode created at ``path`` (relative to the chroot, as Kafka's)."""
        return default_acls(path, secure=self.set_acl)


NO_SECURITY = ZkClientSecurity()


def default_acls(path: str, *, secure: bool) -> list[ACL]:
    """Kafka's ZkData.defaultAcls: open to anyone unless ``secure``; then the creator ALL and
    anyone READ, the latter left out under the sensitive paths.

    >>> [(a.perms, a.id.scheme) for a in default_acls("/brokers/ids", secure=True)]
    [(31, 'auth'), (1, 'world')]
    >>> [(a.perms, a.id.scheme) for a in default_acls("/config/users/alice", secure=True)]
    [(31, 'auth')]
    """
    if not secure:
        return list(OPEN_ACL_UNSAFE)
    if is_sensitive_path(path):
        return list(CREATOR_ALL_ACL)
    return list(CREATOR_ALL_ACL) + list(READ_ACL_UNSAFE)


def jvm_system_properties(java_options: str) -> dict[str, str]:
    """The ``-Dkey=value`` options of a JVM command line such as ``KAFKA_OPTS`` (shell quoting
    as a launcher script's; ``-Dkey`` alone is the empty value; other options are ignored).

    >>> jvm_system_properties('-Xmx1G -Dzookeeper.sasl.client=false "-Dx=a b"')
    {'zookeeper.sasl.client': 'false', 'x': 'a b'}
    """
    try:
        words = shlex.split(java_options)
    except ValueError as exc:
        raise ZkSecurityConfigError(f"cannot read KAFKA_OPTS: {exc}") from None
    properties: dict[str, str] = {}
    for word in words:
        if word.startswith("-D") and len(word) > 2:
            key, _, value = word[2:].partition("=")
            properties[key] = value
    return properties


def zk_client_security_from_environ(
    environ: Mapping[str, str], *, set_acl: bool
) -> ZkClientSecurity:
    """``zk_client_security`` over the system properties of ``KAFKA_OPTS``."""
    return zk_client_security(jvm_system_properties(environ.get("KAFKA_OPTS", "")), set_acl=set_acl)


def zk_client_security(
    system_properties: Mapping[str, str],
    *,
    set_acl: bool,
    read_text: Callable[[Path], str] = lambda path: path.read_text(encoding="utf-8"),
) -> ZkClientSecurity:
    """The login and ACL policy the system properties and ``zookeeper.set.acl`` describe (see
    the module docstring). ZkSecurityConfigError, one line, when they describe none that works.
    """
    sasl_client = system_properties.get(SASL_CLIENT_PROPERTY, "true").strip().lower() == "true"
    named_section = system_properties.get(SASL_CLIENT_CONFIG_PROPERTY)
    section_name = named_section or DEFAULT_SECTION
    service = system_properties.get(SASL_SERVICE_PROPERTY) or DEFAULT_SERVICE
    login_config = system_properties.get(LOGIN_CONFIG_PROPERTY, "").strip()
    if not login_config:
        return ZkClientSecurity(None, set_acl)
    path = Path(login_config)
    try:
        sections = parse_jaas_file(read_text(path))
    except OSError as exc:
        raise ZkSecurityConfigError(
            f"cannot read the JAAS file {path} ({LOGIN_CONFIG_PROPERTY}): {exc.strerror or exc}"
        ) from None
    except JaasConfigError as exc:
        raise ZkSecurityConfigError(f"invalid JAAS file {path}: {exc}") from None
    entries = sections.get(section_name)
    if entries is None:
        if named_section is not None and sasl_client:
            raise ZkSecurityConfigError(
                f"the JAAS file {path} has no section {section_name!r} "
                f"(named by {SASL_CLIENT_CONFIG_PROPERTY})"
            )
        return ZkClientSecurity(None, set_acl)
    if not sasl_client:
        raise ZkSecurityConfigError(
            f"the JAAS file {path} has a {section_name} section for ZooKeeper, but "
            f"{SASL_CLIENT_PROPERTY} is false, which turns SASL to ZooKeeper off: remove "
            "one or the other"
        )
    return ZkClientSecurity(_credentials(path, section_name, entries, service), set_acl)


def _credentials(
    path: Path, section: str, entries: tuple[JaasEntry, ...], service: str
) -> ZkSaslCredentials:
    digest = [e for e in entries if e.login_module == DIGEST_LOGIN_MODULE]
    if not digest:
        modules = ", ".join(e.login_module for e in entries) or "none"
        raise ZkSecurityConfigError(
            f"section {section} of the JAAS file {path} has no {DIGEST_LOGIN_MODULE} "
            f"(login modules: {modules}); only SASL DIGEST-MD5 to ZooKeeper is supported"
        )
    options = digest[0].options
    missing = [key for key in ("username", "password") if not options.get(key)]
    if missing:
        raise ZkSecurityConfigError(
            f"section {section} of the JAAS file {path}: {DIGEST_LOGIN_MODULE} needs the "
            f"option{'s' if len(missing) > 1 else ''} {' and '.join(missing)}"
        )
    return ZkSaslCredentials(options["username"], options["password"], service)
