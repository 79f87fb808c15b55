"""proto.jaas: JAAS login configuration text, as Java's ConfigFile reads a file and Kafka reads
``sasl.jaas.config``."""

from __future__ import annotations

import pytest

from minikafka.proto.jaas import JaasConfigError, JaasEntry, parse_jaas_entries, parse_jaas_file

# What Kafka's documentation gives a broker: the listener's section and ZooKeeper's Client one.
KAFKA_SERVER_JAAS = """\
// the listeners' logins
KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin"
    password="admin-secret"
    user_admin="admin-secret"
    user_alice="alice-secret";
};

/* ZooKeeper: SASL DIGEST-MD5 */
Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="kafka"
    password="kafka-secret";
};
"""


def test_a_kafka_broker_jaas_file() -> None:
    sections = parse_jaas_file(KAFKA_SERVER_JAAS)
    assert list(sections) == ["KafkaServer", "Client"]
    (client,) = sections["Client"]
    assert client.login_module == "org.apache.zookeeper.server.auth.DigestLoginModule"
    assert client.control_flag == "required"
    assert dict(client.options) == {"username": "kafka", "password": "kafka-secret"}
    (server,) = sections["KafkaServer"]
    assert dict(server.options)["user_alice"] == "alice-secret"


def test_several_modules_flags_in_any_case_and_bare_values() -> None:
    sections = parse_jaas_file(
        'App { a.One REQUIRED debug=true; b.Two Sufficient; c.Three optional x=1 y="2"; };'
    )
    assert [(e.login_module, e.control_flag) for e in sections["App"]] == [
        ("a.One", "required"),
        ("b.Two", "sufficient"),
        ("c.Three", "optional"),
    ]
    assert dict(sections["App"][0].options) == {"debug": "true"}
    assert dict(sections["App"][2].options) == {"x": "1", "y": "2"}


def test_quoted_values_keep_every_character_and_java_escapes() -> None:
    (entry,) = parse_jaas_entries(
        r'm.M required password="a;b{c}=d //e /*f*/ #g" q="say \"hi\"\\ok\tend";'
    )
    assert entry.options["password"] == "a;b{c}=d //e /*f*/ #g"
    assert entry.options["q"] == 'say "hi"\\ok\tend'


def test_sasl_jaas_config_form_has_no_section() -> None:
    entries = parse_jaas_entries(
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" '
        'password="alice-secret";'
    )
    assert entries == (
        JaasEntry(
            "org.apache.kafka.common.security.scram.ScramLoginModule",
            "required",
            {"username": "alice", "password": "alice-secret"},
        ),
    )
    assert parse_jaas_entries("  // nothing\n") == ()


def test_an_empty_file_has_no_sections() -> None:
    assert dict(parse_jaas_file("")) == {}
    assert dict(parse_jaas_file("/* only a comment */")) == {}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('Client { m.M required a="1"; }', "line 1: the text ends where ';' was expected"),
        ('Client { m.M required a="1" };', "line 1: expected an option name of m.M or ';'"),
        ("Client {\n m.M always;\n};", "line 2: invalid control flag 'always' for m.M"),
        ("Client { m.M required a=; };", "line 1: option a of m.M has no value"),
        ('Client { m.M required a "1"; };', "line 1: expected '=', found a quoted value"),
        ("Client\n{ m.M required; };\nClient { m.M required; };", "line 3: section Client is"),
        ('Client { m.M required a="1; };', "line 1: a quoted value is never closed"),
        ("Client { /* m.M required; };", "line 1: a /* comment is never closed"),
        ("{ m.M required; };", "line 1: expected a section name, found '{'"),
        ("Client { m.M", "line 1: the text ends where the control flag of m.M was expected"),
    ],
)
def test_malformed_text_names_the_line(text: str, reason: str) -> None:
    with pytest.raises(JaasConfigError) as raised:
        parse_jaas_file(text)
    assert str(raised.value).startswith(reason)


def test_errors_and_reprs_never_show_a_value() -> None:
    with pytest.raises(JaasConfigError) as raised:
        parse_jaas_file('Client { m.M required password "hunter2"; };')
    assert "hunter2" not in str(raised.value)
    (entry,) = parse_jaas_entries('m.M required username="kafka" password="hunter2";')
    assert "hunter2" not in repr(entry)
    assert "password" in repr(entry)


def test_options_cannot_be_changed() -> None:
    (entry,) = parse_jaas_entries('m.M required a="1";')
    with pytest.raises(TypeError):
        entry.options["a"] = "2"  # type: ignore[index]
