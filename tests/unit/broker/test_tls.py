"""broker/security/tls.py: the subject as Java's X500Principal writes it, Kafka's
ssl.principal.mapping.rules (its SslPrincipalMapperTest cases), and a listener's key and trust
stores read with one-line errors. Certificates are made here with cryptography: no network."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from minikafka.broker.config import BrokerConfig
from minikafka.broker.security.principal import ANONYMOUS, KafkaPrincipal
from minikafka.broker.security.tls import (
    ListenerTls,
    NoMatchingRule,
    SslPrincipalMapper,
    x500_name,
)
from minikafka.proto.errors import InvalidConfigError

# --- the distinguished name ---------------------------------------------------------------------


def _name(*rdns: list[x509.NameAttribute[str]]) -> bytes:
    return x509.Name([x509.RelativeDistinguishedName(rdn) for rdn in rdns]).public_bytes()


def _attr(oid: x509.ObjectIdentifier, value: str) -> x509.NameAttribute[str]:
    return x509.NameAttribute(oid, value)


def test_rdns_are_written_last_first() -> None:
    subject = _name(
        [_attr(NameOID.COUNTRY_NAME, "US")],
        [_attr(NameOID.ORGANIZATION_NAME, "acme")],
        [_attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng")],
        [_attr(NameOID.COMMON_NAME, "alice")],
    )
    assert x500_name(subject) == "CN=alice,OU=eng,O=acme,C=US"


def test_rfc_2253_keywords_and_other_types_as_oid_and_der_hex() -> None:
    subject = _name(
        [_attr(NameOID.DOMAIN_COMPONENT, "com")],
        [_attr(NameOID.DOMAIN_COMPONENT, "example")],
        [_attr(NameOID.LOCALITY_NAME, "Fulton")],
        [_attr(NameOID.STATE_OR_PROVINCE_NAME, "MD")],
        [_attr(NameOID.STREET_ADDRESS, "Main St")],
        [_attr(NameOID.USER_ID, "u1")],
        [_attr(NameOID.EMAIL_ADDRESS, "a@b.c")],  # IA5String, no RFC 2253 keyword
        [_attr(NameOID.SERIAL_NUMBER, "42")],  # PrintableString, no keyword either
    )
    assert x500_name(subject) == (
        "2.5.4.5=#13023432,1.2.840.113549.1.9.1=#16056140622e63,UID=u1,STREET=Main St,"
        "ST=MD,L=Fulton,DC=example,DC=com"
    )


def test_multi_valued_rdn_is_joined_by_plus() -> None:
    subject = _name(
        [_attr(NameOID.ORGANIZATION_NAME, "acme")],
        [_attr(NameOID.COMMON_NAME, "alice"), _attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng")],
    )
    # the attributes of a set in their DER (sorted) order
    assert x500_name(subject) in ("CN=alice+OU=eng,O=acme", "OU=eng+CN=alice,O=acme")


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("Tkac, Adam", "Tkac\\, Adam"),
        ('a+b=c"d\\e<f>g;h#i', 'a\\+b\\=c\\"d\\\\e\\<f\\>g\\;h\\#i'),
        ("  padded ", "\\ \\ padded\\ "),
        ("#first", "\\#first"),
        ("ünïcödé", "ünïcödé"),
    ],
)
def test_special_characters_are_escaped_as_java_does(value: str, written: str) -> None:
    assert x500_name(_name([_attr(NameOID.COMMON_NAME, value)])) == f"CN={written}"


# --- ssl.principal.mapping.rules (Kafka's SslPrincipalMapperTest) ------------------------------


@pytest.mark.parametrize(
    "rules",
    [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ],
)
def test_valid_rules(rules: str) -> None:
    SslPrincipalMapper.from_rules(rules)


@pytest.mark.parametrize(
    "rules",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
    ],
)
def test_invalid_rules(rules: str) -> None:
    with pytest.raises(InvalidConfigError, match=r"ssl\.principal\.mapping\.rules"):
        SslPrincipalMapper.from_rules(rules)


def test_the_first_matching_rule_names_the_principal() -> None:
    mapper = SslPrincipalMapper.from_rules(
        ", ".join(
            [
                "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
                "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
                "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
                "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
                "DEFAULT",
            ]
        )
    )
    assert mapper.name("CN=Duke,OU=ServiceUsers,O=Org,C=US") == "duke"
    assert mapper.name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US") == "duke@sme"
    assert mapper.name("cn=duke,ou=sme,dc=mycp,dc=com") == "DUKE@SME"
    assert mapper.name("cN=duke,OU=JavaSoft,O=Sun Microsystems") == "DUKE"
    assert (
        mapper.name("OU=JavaSoft,O=Sun Microsystems,C=US") == "OU=JavaSoft,O=Sun Microsystems,C=US"
    )


def test_no_matching_rule_is_an_error() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
    with pytest.raises(NoMatchingRule):
        mapper.name("CN=alice,OU=eng")


@pytest.mark.parametrize(
    ("rules", "parsed"),
    [
        ("", "[]"),
        ("DEFAULT", "[DEFAULT]"),
        ("RULE://", "[RULE:/]"),
        ("RULE:/.*/", "[RULE:/.*]"),
        ("RULE:/.*/L", "[RULE:/.*/L]"),
        ("RULE://,DEFAULT", "[RULE:/, DEFAULT]"),
        ("  RULE:// ,  DEFAULT  ", "[RULE:/, DEFAULT]"),
        ("  RULE:   /     / ,  DEFAULT  ", "[RULE:   /     , DEFAULT]"),
        ("  RULE:  /     /U   ,DEFAULT  ", "[RULE:  /     /U, DEFAULT]"),
        (
            "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
            "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
        ),
        (",   , , ,      , , ,   ", "[]"),
        (",,RULE://,,,DEFAULT,,", "[RULE:/, DEFAULT]"),
        (",  , RULE: /   /    ,,,   DEFAULT, ,   ", "[RULE: /   , DEFAULT]"),
        ("RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//", "[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]"),
        (
            "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, "
            "/DEFAULT/,DEFAULT",
            "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, "
            "/DEFAULT, DEFAULT]",
        ),
    ],
)
def test_rules_split_where_kafka_splits_them(rules: str, parsed: str) -> None:
    assert repr(SslPrincipalMapper.from_rules(rules)) == f"SslPrincipalMapper(rules = {parsed})"


def test_a_comma_inside_a_pattern_stays_in_it() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


def test_a_back_reference_past_the_last_group_is_text() -> None:
    mapper = SslPrincipalMapper.from_rules("RULE:^CN=(\\w+),(\\w+)=.*$/$1@$3$12/")
    assert mapper.name("CN=alice,OU=eng") == "alice@$3alice2"


# --- a listener's key and trust stores -----------------------------------------------------------


class Pki:
    """A CA and certificates it signs, as PEM files in a directory."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([_attr(NameOID.COMMON_NAME, "test CA")])
        self.ca = self._certificate(ca_name, ca_name, self.ca_key.public_key(), ca=True)
        (directory / "ca.pem").write_bytes(self.ca.public_bytes(serialization.Encoding.PEM))

    def _certificate(
        self, subject: x509.Name, issuer: x509.Name, public_key: object, *, ca: bool = False
    ) -> x509.Certificate:
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public_key)  # type: ignore[arg-type]
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .sign(self.ca_key, hashes.SHA256())
        )

    def key_store(self, name: str, cn: str, password: str | None = None) -> Path:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name(
            [_attr(NameOID.ORGANIZATION_NAME, "acme"), _attr(NameOID.COMMON_NAME, cn)]
        )
        certificate = self._certificate(subject, self.ca.subject, key.public_key())
        encryption: serialization.KeySerializationEncryption = (
            serialization.NoEncryption()
            if password is None
            else serialization.BestAvailableEncryption(password.encode())
        )
        path = self.dir / f"{name}.pem"
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
            )
            + certificate.public_bytes(serialization.Encoding.PEM)
            + self.ca.public_bytes(serialization.Encoding.PEM)
        )
        return path


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path)


def _load(**keys: str) -> ListenerTls:
    config = BrokerConfig.from_properties(
        {
            "broker.id": "1",
            "zookeeper.connect": "zk:2181",
            "listeners": "PLAINTEXT://:9092,SSL://:9093",
            **keys,
        }
    )
    return ListenerTls.load(config.listener_config("SSL"))


def test_a_listener_loads_its_stores_and_maps_a_peer_certificate(pki: Pki) -> None:
    tls = _load(
        **{
            "ssl.keystore.location": str(pki.key_store("broker", "broker1")),
            "ssl.truststore.location": str(pki.dir / "ca.pem"),
            "listener.name.ssl.ssl.client.auth": "required",
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/L,DEFAULT",
        }
    )
    client = x509.load_pem_x509_certificate(pki.key_store("alice", "Alice").read_bytes())
    der = client.public_bytes(serialization.Encoding.DER)
    assert tls.principal(der) == KafkaPrincipal("User", "alice")
    assert tls.principal(None) == ANONYMOUS
    assert tls.server_context().verify_mode.name == "CERT_REQUIRED"
    assert tls.client_context().check_hostname


def test_an_encrypted_key_and_an_inline_key_store(pki: Pki) -> None:
    store = pki.key_store("enc", "broker1", password="s3cret")
    assert _load(**{"ssl.keystore.location": str(store), "ssl.key.password": "s3cret"})
    text = pki.key_store("inline", "broker1").read_text()
    key_end = text.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----")
    tls = _load(
        **{
            "ssl.keystore.key": text[:key_end],
            "ssl.keystore.certificate.chain": text[key_end:],
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert not tls.client_context().check_hostname


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"ssl.keystore.location": "{dir}/missing.pem"}, "ssl.keystore.location: cannot read"),
        ({"ssl.keystore.location": "{dir}/garbled-key.pem"}, "not a valid PEM key"),
        ({"ssl.keystore.location": "{dir}/ca.pem"}, "no PEM private key"),
        (
            {"ssl.keystore.location": "{dir}/enc.pem", "ssl.key.password": "wrong"},
            "wrong ssl.key.password",
        ),
        ({"ssl.keystore.location": "{dir}/enc.pem"}, "encrypted and no ssl.key.password"),
        ({"ssl.keystore.location": "{dir}/mismatch.pem"}, "does not match the first certificate"),
        (
            {"ssl.keystore.location": "{dir}/broker.pem", "ssl.client.auth": "required"},
            "needs a trust store",
        ),
        (
            {
                "ssl.keystore.location": "{dir}/broker.pem",
                "ssl.truststore.location": "{dir}/garbled.pem",
            },
            "no PEM certificate",
        ),
        (
            {"ssl.keystore.location": "{dir}/broker.pem", "ssl.cipher.suites": "NO-SUCH-CIPHER"},
            "no cipher of ssl.cipher.suites",
        ),
        (
            {"ssl.keystore.location": "{dir}/broker.pem", "ssl.principal.mapping.rules": "x"},
            "invalid rule",
        ),
    ],
)
def test_a_bad_store_is_one_line_naming_the_key(
    pki: Pki, keys: dict[str, str], message: str
) -> None:
    pki.key_store("broker", "broker1")
    pki.key_store("enc", "broker1", password="s3cret")
    (pki.dir / "garbled.pem").write_text(
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"
    )
    garbled = (pki.dir / "garbled.pem").read_text()
    (pki.dir / "garbled-key.pem").write_text(garbled + (pki.dir / "ca.pem").read_text())
    one, other = pki.key_store("one", "a").read_text(), pki.key_store("other", "b").read_text()
    split = "-----END PRIVATE KEY-----\n"
    (pki.dir / "mismatch.pem").write_text(one.split(split)[0] + split + other.split(split)[1])
    with pytest.raises(InvalidConfigError) as raised:
        _load(**{k: v.format(dir=pki.dir) for k, v in keys.items()})
    assert message in raised.value.message
    assert "\n" not in raised.value.message
    assert "s3cret" not in raised.value.message  # never the password
