"""ClientSecurity: Kafka's client keys as librdkafka spells them, checked, turned into gRPC
credentials; the tools' config files route them to the clients' ``security`` argument."""

from __future__ import annotations

import argparse
import datetime
import io
import re
from contextlib import redirect_stderr
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from minikafka.client._security import ClientSecurity
from minikafka.client.cli import _admin_tool
from minikafka.client.cli._config import client_kwargs
from minikafka.client.producer.producer import Producer
from minikafka.proto.errors import InvalidConfigError


def _pem_files(directory: Path, password: str | None = None) -> tuple[Path, Path, Path]:
    """A self-signed certificate as CA, and a client key and certificate (files)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    encryption: serialization.KeySerializationEncryption = (
        serialization.NoEncryption()
        if password is None
        else serialization.BestAvailableEncryption(password.encode())
    )
    paths = directory / "ca.pem", directory / "alice.crt", directory / "alice.key"
    paths[0].write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
    return paths


def test_plaintext_by_default_and_kafka_names_map_to_fields() -> None:
    assert ClientSecurity().channel_credentials() is None
    security = ClientSecurity.from_config(
        {"security.protocol": "ssl", "ssl.ca.location": "/ca.pem", "linger.ms": "5"}
    )
    assert security.security_protocol == "SSL" and security.uses_tls
    assert security.ssl_ca_location == "/ca.pem"
    sasl_ssl = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "u"}
    assert ClientSecurity.of({**sasl_ssl, "sasl.password": "p"}).uses_tls
    assert ClientSecurity.of(security) is security


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"security.protocol": "TLS"}, "security.protocol: must be one of PLAINTEXT, SSL"),
        (
            {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none"},
            "gRPC always checks",
        ),
        ({"ssl.endpoint.identification.algorithm": "ldap"}, "must be https or none"),
        ({"ssl.certificate.location": "/c.pem"}, "without ssl.key.location"),
    ],
)
def test_bad_settings_are_refused(config: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        ClientSecurity.from_config(config)
    assert message in raised.value.message


def test_an_unknown_key_in_a_security_mapping_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match=re.escape("ssl.keystore.location")):
        ClientSecurity.of({"ssl.keystore.location": "/k.pem"})


def test_credentials_from_files_and_an_encrypted_key(tmp_path: Path) -> None:
    ca, certificate, key = _pem_files(tmp_path, password="pw")
    security = ClientSecurity(
        security_protocol="SSL",
        ssl_ca_location=str(ca),
        ssl_certificate_location=str(certificate),
        ssl_key_location=str(key),
        ssl_key_password="pw",
    )
    assert security.channel_credentials() is not None
    assert "pw" not in repr(security)
    with pytest.raises(InvalidConfigError, match=re.escape("wrong ssl.key.password")):
        security.replace(ssl_key_password="nope").channel_credentials()
    with pytest.raises(InvalidConfigError, match=re.escape("ssl.ca.location: cannot read")):
        security.replace(ssl_ca_location=str(tmp_path / "missing.pem")).channel_credentials()
    key.write_text("garbage")
    with pytest.raises(InvalidConfigError, match="no PEM private key"):
        security.channel_credentials()


def test_a_client_with_a_bad_file_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError, match=re.escape("ssl.ca.location")):
        Producer(
            "127.0.0.1:1",
            security={"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "x.pem")},
        )


def test_tool_config_routes_security_keys_to_the_security_argument() -> None:
    warnings: list[str] = []
    kwargs = client_kwargs(
        Producer,
        {"linger.ms": "7", "security.protocol": "SSL", "ssl.ca.location": "/ca.pem"},
        warnings.append,
    )
    assert kwargs == {
        "linger_ms": 7,
        "security": {"security.protocol": "SSL", "ssl.ca.location": "/ca.pem"},
    }
    assert warnings == []


def test_admin_tools_take_a_command_config_file(tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text(f"security.protocol=SSL\nssl.ca.location={tmp_path / 'missing.pem'}\n")
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap-server")
    _admin_tool.add_command_config(parser)
    args = parser.parse_args(["--bootstrap-server", "127.0.0.1:1", "--command-config", str(config)])
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        status = _admin_tool.run_admin_tool(
            args, lambda *a: 0, error_line=lambda e: f"Error: {e.message}"
        )
    assert status == 1
    assert stderr.getvalue().count("\n") == 1
    assert "ssl.ca.location: cannot read" in stderr.getvalue()
