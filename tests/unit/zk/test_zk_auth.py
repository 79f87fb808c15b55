"""zk.zk_auth: the broker's SASL login to ZooKeeper from KAFKA_OPTS and the JAAS Client section,
and the ACLs of the znodes it creates (Kafka's JaasUtils and ZkData.defaultAcls)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.security import ACL, Id, Permissions

from minikafka.zk.errors import ZkSecurityConfigError
from minikafka.zk.zk_auth import (
    NO_SECURITY,
    ZkClientSecurity,
    ZkSaslCredentials,
    default_acls,
    jvm_system_properties,
    zk_client_security,
    zk_client_security_from_environ,
)

CLIENT_SECTION = """\
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="x";
};
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="kafka"
    password="kafka-secret";
};
"""

CREATOR_ALL = ACL(Permissions.ALL, Id("auth", ""))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))
WORLD_ALL = ACL(Permissions.ALL, Id("world", "anyone"))


def _jaas(tmp_path: Path, text: str = CLIENT_SECTION) -> dict[str, str]:
    path = tmp_path / "kafka_server_jaas.conf"
    path.write_text(text)
    return {"java.security.auth.login.config": str(path)}


# --- KAFKA_OPTS ---------------------------------------------------------------------------------


def test_system_properties_come_from_kafka_opts_as_a_launcher_splits_them() -> None:
    opts = (
        "-Xmx1G -Djava.security.auth.login.config=/etc/kafka/jaas.conf "
        "'-Dzookeeper.sasl.clientconfig=Zk Client' -Dflag -D -server"
    )
    assert jvm_system_properties(opts) == {
        "java.security.auth.login.config": "/etc/kafka/jaas.conf",
        "zookeeper.sasl.clientconfig": "Zk Client",
        "flag": "",
    }
    assert jvm_system_properties("") == {}


def test_unbalanced_quotes_in_kafka_opts_are_one_line() -> None:
    with pytest.raises(ZkSecurityConfigError, match=r"^cannot read KAFKA_OPTS: No closing"):
        jvm_system_properties("-Dx='open")


def test_the_client_section_named_in_kafka_opts_is_the_login(tmp_path: Path) -> None:
    path = tmp_path / "jaas.conf"
    path.write_text(CLIENT_SECTION)
    environ = {"KAFKA_OPTS": f"-Djava.security.auth.login.config={path}", "OTHER": "x"}
    security = zk_client_security_from_environ(environ, set_acl=True)
    assert security == ZkClientSecurity(ZkSaslCredentials("kafka", "kafka-secret"), set_acl=True)
    assert security.sasl is not None
    assert security.sasl.kazoo_sasl_options() == {
        "mechanism": "DIGEST-MD5",
        "username": "kafka",
        "password": "kafka-secret",
        "service": "zookeeper",
    }


def test_no_jaas_file_means_no_sasl() -> None:
    assert zk_client_security_from_environ({}, set_acl=False) == NO_SECURITY
    assert zk_client_security({"zookeeper.sasl.client": "false"}, set_acl=False) == NO_SECURITY


# --- the JAAS Client section --------------------------------------------------------------------


def test_another_section_and_service_name_by_system_property(tmp_path: Path) -> None:
    props = _jaas(tmp_path, CLIENT_SECTION.replace("Client {", "ZkClient {"))
    props["zookeeper.sasl.clientconfig"] = "ZkClient"
    props["zookeeper.sasl.client.username"] = "zk"
    security = zk_client_security(props, set_acl=False)
    assert security.sasl == ZkSaslCredentials("kafka", "kafka-secret", service="zk")


def test_a_jaas_file_without_a_client_section_means_no_sasl(tmp_path: Path) -> None:
    props = _jaas(tmp_path, CLIENT_SECTION.split("Client {")[0])
    assert zk_client_security(props, set_acl=False).sasl is None


def test_a_named_section_missing_from_the_file_is_an_error(tmp_path: Path) -> None:
    props = {**_jaas(tmp_path), "zookeeper.sasl.clientconfig": "ZkClient"}
    with pytest.raises(ZkSecurityConfigError, match="has no section 'ZkClient'"):
        zk_client_security(props, set_acl=False)


def test_sasl_client_false_with_a_client_section_is_an_error_as_in_kafka(tmp_path: Path) -> None:
    props = {**_jaas(tmp_path), "zookeeper.sasl.client": "false"}
    with pytest.raises(ZkSecurityConfigError, match=r"zookeeper\.sasl\.client is false"):
        zk_client_security(props, set_acl=False)


def test_a_missing_jaas_file_is_one_line(tmp_path: Path) -> None:
    props = {"java.security.auth.login.config": str(tmp_path / "nope.conf")}
    with pytest.raises(ZkSecurityConfigError) as raised:
        zk_client_security(props, set_acl=False)
    assert str(raised.value) == (
        f"cannot read the JAAS file {tmp_path / 'nope.conf'} "
        "(java.security.auth.login.config): No such file or directory"
    )


def test_a_malformed_jaas_file_names_file_and_line(tmp_path: Path) -> None:
    props = _jaas(tmp_path, 'Client {\n  m.M required password="kafka-secret"\n};')
    with pytest.raises(ZkSecurityConfigError) as raised:
        zk_client_security(props, set_acl=False)
    message = str(raised.value)
    assert message.startswith(f"invalid JAAS file {tmp_path / 'kafka_server_jaas.conf'}: line 3")
    assert "kafka-secret" not in message


def test_only_digest_md5_is_supported(tmp_path: Path) -> None:
    props = _jaas(
        tmp_path,
        "Client { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };",
    )
    with pytest.raises(ZkSecurityConfigError, match="only SASL DIGEST-MD5 to ZooKeeper"):
        zk_client_security(props, set_acl=False)


def test_digest_login_needs_username_and_password(tmp_path: Path) -> None:
    props = _jaas(
        tmp_path,
        "Client { org.apache.zookeeper.server.auth.DigestLoginModule required username=k; };",
    )
    with pytest.raises(ZkSecurityConfigError, match=r"needs the option password$"):
        zk_client_security(props, set_acl=False)


def test_set_acl_needs_a_sasl_login_as_in_kafka() -> None:
    with pytest.raises(ZkSecurityConfigError, match=r"^zookeeper\.set\.acl is true, but"):
        zk_client_security({}, set_acl=True)


def test_the_password_is_never_in_a_repr(tmp_path: Path) -> None:
    security = zk_client_security(_jaas(tmp_path), set_acl=True)
    assert "kafka-secret" not in repr(security)
    assert "kafka" in repr(security)


# --- ACLs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/brokers",
        "/brokers/ids/1",
        "/brokers/topics/orders/partitions/0/state",
        "/controller",
        "/controller_epoch",
        "/config",
        "/config/topics/orders",
        "/config/changes/config_change_0000000001",
        "/admin/delete_topics/orders",
        "/isr_change_notification/isr_change_0000000003",
        "/cluster/id",
        "/kafka-acl/Topic/orders",  # Kafka leaves ACLs world-readable: not a sensitive path
        "/minikafka",  # a chroot
    ],
)
def test_secure_znodes_are_the_creators_and_world_readable(path: str) -> None:
    assert default_acls(path, secure=True) == [CREATOR_ALL, WORLD_READ]


@pytest.mark.parametrize(
    "path",
    [
        "/config/users",
        "/config/users/alice",
        "/config/brokers",
        "/config/brokers/<default>",
        "/config/brokers/1",
        "/delegation_token/tokens/t1",
    ],
)
def test_sensitive_znodes_are_the_creators_alone(path: str) -> None:
    assert default_acls(path, secure=True) == [CREATOR_ALL]


def test_without_set_acl_every_znode_is_open() -> None:
    assert default_acls("/config/users/alice", secure=False) == [WORLD_ALL]
    assert default_acls("/brokers/ids/1", secure=False) == [WORLD_ALL]
    assert NO_SECURITY.acls("/controller") == [WORLD_ALL]
