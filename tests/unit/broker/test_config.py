"""BrokerConfig: properties syntax, sources and their precedence, defaults, listeners, errors."""

from __future__ import annotations

import dataclasses
import re
import socket
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from minikafka.broker.config import (
    BrokerConfig,
    ConfigSource,
    parse_overrides,
    parse_properties,
    properties_from_environ,
    read_properties,
)
from minikafka.broker.storage.config import LogConfig
from minikafka.proto.common import EndPoint
from minikafka.proto.errors import ErrorCode, InvalidConfigError

REQUIRED = {"broker.id": "1", "zookeeper.connect": "zk1:2181,zk2:2181/minikafka"}


def from_props(props: dict[str, str]) -> BrokerConfig:
    return BrokerConfig.from_properties({**REQUIRED, **props})


@pytest.fixture(autouse=True)
def fixed_hostname(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getfqdn", lambda: "broker1.example.com")


# --- properties syntax --------------------------------------------------------------------------


def test_separators_comments_and_blank_lines() -> None:
    text = (
        "# a comment\n"
        "! another comment\n"
        "\n"
        "   \t\n"
        "broker.id=1\n"
        "zookeeper.connect: zk:2181\n"
        "log.dirs /data/a\n"
        "  num.partitions   =   3   \n"
        "empty.value=\n"
        "bare.key\n"
    )
    assert parse_properties(text) == {
        "broker.id": "1",
        "zookeeper.connect": "zk:2181",
        "log.dirs": "/data/a",
        "num.partitions": "3",
        "empty.value": "",
        "bare.key": "",
    }


def test_only_the_first_separator_splits() -> None:
    assert parse_properties("listeners=PLAINTEXT://h:9092\na:b=c\nd = = e\n") == {
        "listeners": "PLAINTEXT://h:9092",
        "a": "b=c",
        "d": "= e",
    }


def test_line_continuation() -> None:
    text = "log.dirs=/data/a,\\\n        /data/b,\\\n   /data/c\nnext=1\n"
    assert parse_properties(text) == {"log.dirs": "/data/a,/data/b,/data/c", "next": "1"}


def test_even_backslashes_do_not_continue() -> None:
    assert parse_properties("path=c:\\\\dir\\\\\nnext=1\n") == {"path": "c:\\dir\\", "next": "1"}


def test_comment_ending_in_backslash_does_not_continue() -> None:
    assert parse_properties("# comment \\\nkey=value\n") == {"key": "value"}


def test_continuation_on_the_last_line() -> None:
    assert parse_properties("key=value\\") == {"key": "value"}


def test_escapes() -> None:
    text = "tab=a\\tb\nunicode=\\u00e9t\\u00E9\nkey\\=with\\:separators=v\nother=\\q\n"
    assert parse_properties(text) == {
        "tab": "a\tb",
        "unicode": "été",
        "key=with:separators": "v",
        "other": "q",
    }


def test_malformed_unicode_escape() -> None:
    with pytest.raises(InvalidConfigError, match="uXXXX"):
        parse_properties("key=\\u12x4\n")


def test_line_endings_and_form_feed() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3\n\fd=4") == {"a": "1", "b": "2", "c": "3", "d": "4"}


def test_last_value_wins() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_read_properties(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("broker.id=7\nzookeeper.connect=zk:2181\n", encoding="utf-8")
    assert read_properties(path) == {"broker.id": "7", "zookeeper.connect": "zk:2181"}


# --- environment and overrides ------------------------------------------------------------------


def test_environment_names() -> None:
    environ = {
        "KAFKA_BROKER_ID": "3",
        "KAFKA_ZOOKEEPER_CONNECT": "zk:2181",
        "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://kafka-3:9092",
        "KAFKA_SOME__UNDERSCORED_KEY": "u",
        "KAFKA_SOME___DASHED_KEY": "d",
        "KAFKA_HEAP_OPTS": "-Xmx1G",
        "KAFKA_JMX_OPTS": "-Dx",
        "KAFKA_VERSION": "3.7",
        "KAFKA_": "nothing",
        "PATH": "/usr/bin",
        "ZOOKEEPER_CONNECT": "not-kafka",
    }
    assert properties_from_environ(environ) == {
        "broker.id": "3",
        "zookeeper.connect": "zk:2181",
        "advertised.listeners": "PLAINTEXT://kafka-3:9092",
        "some_underscored.key": "u",
        "some-dashed.key": "d",
    }


def test_overrides() -> None:
    assert parse_overrides(["broker.id=2", " num.partitions = 4 ", "a=b=c", "empty="]) == {
        "broker.id": "2",
        "num.partitions": "4",
        "a": "b=c",
        "empty": "",
    }


@pytest.mark.parametrize("item", ["broker.id", "=5", " =5"])
def test_malformed_override(item: str) -> None:
    with pytest.raises(InvalidConfigError, match="key=value"):
        parse_overrides([item])


def test_precedence_file_then_environment_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "broker.id=1\nzookeeper.connect=file-zk:2181\nnum.partitions=2\n"
        "default.replication.factor=2\nmin.insync.replicas=2\n",
        encoding="utf-8",
    )
    environ = {"KAFKA_NUM_PARTITIONS": "5", "KAFKA_DEFAULT_REPLICATION_FACTOR": "3"}

    config = BrokerConfig.load(path, environ=environ, overrides=["default.replication.factor=1"])

    assert config.zookeeper_connect == "file-zk:2181"  # file only
    assert config.num_partitions == 5  # environment beats file
    assert config.default_replication_factor == 1  # override beats environment
    assert config.min_insync_replicas == 2


def test_load_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BROKER_ID", "9")
    monkeypatch.setenv("KAFKA_ZOOKEEPER_CONNECT", "zk:2181")
    assert BrokerConfig.load().broker_id == 9


def test_load_without_file() -> None:
    config = BrokerConfig.load(environ={}, overrides=["broker.id=0", "zookeeper.connect=zk"])
    assert (config.broker_id, config.zookeeper_connect) == (0, "zk")


def test_kafkas_own_server_properties_loads_quietly(tmp_path: Path) -> None:
    # The keys of the server.properties that ships with Kafka.
    path = tmp_path / "server.properties"
    path.write_text(
        "broker.id=0\n"
        "num.network.threads=3\nnum.io.threads=8\n"
        "socket.send.buffer.bytes=102400\nsocket.receive.buffer.bytes=102400\n"
        "socket.request.max.bytes=104857600\n"
        "log.dirs=/tmp/kafka-logs\nnum.partitions=1\nnum.recovery.threads.per.data.dir=1\n"
        "offsets.topic.replication.factor=1\ntransaction.state.log.replication.factor=1\n"
        "transaction.state.log.min.isr=1\nlog.retention.hours=168\n"
        "log.segment.bytes=1073741824\nlog.retention.check.interval.ms=300000\n"
        "zookeeper.connect=localhost:2181\nzookeeper.connection.timeout.ms=18000\n"
        "group.initial.rebalance.delay.ms=0\n",
        encoding="utf-8",
    )
    with capture_logs() as logs:
        config = BrokerConfig.load(path, environ={})
    assert [e for e in logs if e["log_level"] == "warning"] == []
    assert config.unknown == {}
    assert config.offsets_topic_replication_factor == 1
    assert config.group_initial_rebalance_delay_ms == 0


# --- defaults -----------------------------------------------------------------------------------


def test_kafka_defaults() -> None:
    config = from_props({})
    assert config.broker_id == 1
    assert config.zookeeper_connect == "zk1:2181,zk2:2181/minikafka"
    assert config.listeners == (EndPoint("PLAINTEXT", "", 9092, "PLAINTEXT"),)
    assert config.advertised_listeners == (
        EndPoint("PLAINTEXT", "broker1.example.com", 9092, "PLAINTEXT"),
    )
    assert config.inter_broker_listener_name == "PLAINTEXT"
    assert config.broker_rack is None
    assert config.log_dirs == (Path("/tmp/kafka-logs"),)
    expected = {
        "zookeeper_session_timeout_ms": 18_000,
        "zookeeper_connection_timeout_ms": 18_000,
        "zookeeper_set_acl": False,
        "num_partitions": 1,
        "default_replication_factor": 1,
        "min_insync_replicas": 1,
        "replica_lag_time_max_ms": 30_000,
        "replica_fetch_wait_max_ms": 500,
        "replica_fetch_min_bytes": 1,
        "replica_fetch_max_bytes": 1_048_576,
        "replica_socket_timeout_ms": 30_000,
        "replica_high_watermark_checkpoint_interval_ms": 5_000,
        "request_timeout_ms": 30_000,
        "unclean_leader_election_enable": False,
        "auto_create_topics_enable": True,
        "auto_leader_rebalance_enable": True,
        "leader_imbalance_check_interval_seconds": 300,
        "leader_imbalance_per_broker_percentage": 10,
        "controlled_shutdown_enable": True,
        "controlled_shutdown_max_retries": 3,
        "controlled_shutdown_retry_backoff_ms": 5_000,
        "delete_topic_enable": True,
        "offsets_topic_num_partitions": 50,
        "offsets_topic_replication_factor": 3,
        "group_initial_rebalance_delay_ms": 3_000,
        "log_flush_offset_checkpoint_interval_ms": 60_000,
        "log_retention_check_interval_ms": 300_000,
    }
    assert {name: getattr(config, name) for name in expected} == expected
    assert config.log == LogConfig()
    assert config.message_max_bytes == 1_048_588


def test_every_value_parsed() -> None:
    config = from_props(
        {
            "zookeeper.session.timeout.ms": "6000",
            "zookeeper.connection.timeout.ms": "4000",
            "unclean.leader.election.enable": "TRUE",
            "auto.create.topics.enable": " false ",
            "replica.lag.time.max.ms": "10000",
            "replica.fetch.wait.max.ms": "+100",
            "broker.rack": "rack-a",
            "zookeeper.set.acl": "true",
        }
    )
    assert config.zookeeper_set_acl is True
    assert config.zookeeper_session_timeout_ms == 6000
    assert config.zookeeper_connection_timeout_ms == 4000
    assert config.unclean_leader_election_enable is True
    assert config.auto_create_topics_enable is False
    assert config.replica_lag_time_max_ms == 10_000
    assert config.replica_fetch_wait_max_ms == 100
    assert config.broker_rack == "rack-a"


def test_connection_timeout_follows_session_timeout() -> None:
    assert from_props({"zookeeper.session.timeout.ms": "6000"}).zookeeper_connection_timeout_ms == (
        6000
    )


def test_log_dirs_and_log_dir_fallback() -> None:
    assert from_props({"log.dirs": " /data/a , /data/b ,"}).log_dirs == (
        Path("/data/a"),
        Path("/data/b"),
    )
    assert from_props({"log.dir": "/data/one"}).log_dirs == (Path("/data/one"),)
    assert from_props({"log.dir": "/data/one", "log.dirs": "/data/two"}).log_dirs == (
        Path("/data/two"),
    )


def test_storage_keys_go_to_log_config() -> None:
    config = from_props(
        {
            "log.segment.bytes": "1048576",
            "log.retention.hours": "24",
            "log.index.interval.bytes": "1024",
            "message.max.bytes": "2000000",
            # A topic-level key has no meaning in server.properties (Kafka calls it unknown).
            "segment.ms": "1000",
        }
    )
    assert config.log == LogConfig.from_properties(
        {
            "log.segment.bytes": "1048576",
            "log.retention.hours": "24",
            "log.index.interval.bytes": "1024",
            "message.max.bytes": "2000000",
        }
    )
    assert config.log.segment_ms == LogConfig().segment_ms
    assert config.message_max_bytes == 2_000_000
    assert config.unknown == {"segment.ms": "1000"}


def test_storage_key_errors_come_from_log_config() -> None:
    with pytest.raises(InvalidConfigError, match=re.escape("log.segment.bytes")):
        from_props({"log.segment.bytes": "lots"})


# --- listeners ----------------------------------------------------------------------------------


def test_listener_parsing() -> None:
    config = from_props(
        {
            "listeners": "internal://0.0.0.0:19092, EXTERNAL://[::1]:9092,",
            "advertised.listeners": "INTERNAL://kafka-1:19092,EXTERNAL://localhost:9092",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,external:plaintext",
            "inter.broker.listener.name": "internal",
        }
    )
    assert config.listeners == (
        EndPoint("INTERNAL", "0.0.0.0", 19092, "PLAINTEXT"),
        EndPoint("EXTERNAL", "::1", 9092, "PLAINTEXT"),
    )
    assert config.bind_addresses == ("0.0.0.0:19092", "[::1]:9092")
    assert config.inter_broker_endpoint == EndPoint("INTERNAL", "kafka-1", 19092, "PLAINTEXT")
    assert config.advertised_listeners[1].connection_string == "EXTERNAL://localhost:9092"


def test_empty_host_binds_everywhere_and_advertises_the_hostname() -> None:
    config = from_props({"listeners": "PLAINTEXT://:9093"})
    assert config.bind_addresses == ("0.0.0.0:9093",)
    assert config.advertised_listeners == (
        EndPoint("PLAINTEXT", "broker1.example.com", 9093, "PLAINTEXT"),
    )


def test_advertised_listeners_default_to_listeners() -> None:
    config = from_props({"listeners": "PLAINTEXT://10.0.0.5:9092"})
    assert config.advertised_listeners == config.listeners
    assert config.describe()["advertised.listeners"] == (
        "PLAINTEXT://10.0.0.5:9092",
        ConfigSource.DEFAULT_CONFIG,
    )


@pytest.mark.parametrize(
    "props",
    [
        {"listeners": "PLAINTEXT://0.0.0.0:9092"},  # advertised by default
        {"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
        {"listeners": "PLAINTEXT://[::]:9092"},
    ],
)
def test_unroutable_advertised_address_is_refused(props: dict[str, str]) -> None:
    with pytest.raises(InvalidConfigError, match=r"advertised\.listeners.*non-routable"):
        from_props(props)


def test_binding_0_0_0_0_with_a_routable_advertised_address() -> None:
    config = from_props(
        {
            "listeners": "PLAINTEXT://0.0.0.0:9092",
            "advertised.listeners": "PLAINTEXT://kafka-1:9092",
        }
    )
    assert config.bind_addresses == ("0.0.0.0:9092",)
    assert config.inter_broker_endpoint.host == "kafka-1"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"listeners": "PLAINTEXT:/h:9092"}, "NAME://host:port"),
        ({"listeners": "PLAINTEXT://h"}, "NAME://host:port"),
        ({"listeners": "PLAINTEXT://h:port"}, "NAME://host:port"),
        ({"listeners": "PLAINTEXT://h:70000"}, "out of range"),
        ({"listeners": ","}, "no listener"),
        ({"listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2"}, "different name"),
        (
            {
                "listeners": "A://h:1,B://h:1",
                "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT",
                "inter.broker.listener.name": "A",
            },
            "different port",
        ),
        ({"listeners": "INTERNAL://h:1"}, "not in listener.security.protocol.map"),
        (
            {"listeners": "SSL://h:9093", "inter.broker.listener.name": "SSL"},
            "has no key store: set ssl.keystore.location",
        ),
        (
            {
                "listeners": "PLAINTEXT://h:1",
                "advertised.listeners": "PLAINTEXT://h:1,OTHER://h:2",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
            },
            "among those of listeners",
        ),
        ({"inter.broker.listener.name": "REPLICATION"}, "inter.broker.listener.name"),
        ({"listener.security.protocol.map": "PLAINTEXT"}, "LISTENER_NAME:SECURITY_PROTOCOL"),
    ],
)
def test_bad_listeners(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        from_props(props)


# --- bad values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("broker.id", "one", "not a number of type INT"),
        ("broker.id", "-1", "must be at least 0"),
        ("broker.id", "2147483648", "not a number of type INT"),
        ("broker.id", "1_000", "not a number of type INT"),
        ("num.partitions", "0", "must be at least 1"),
        ("num.partitions", "", "not a number of type INT"),
        ("default.replication.factor", "0", "must be at least 1"),
        ("min.insync.replicas", "0", "must be at least 1"),
        ("offsets.topic.replication.factor", "40000", "not a number of type SHORT"),
        ("offsets.topic.num.partitions", "0", "must be at least 1"),
        ("replica.lag.time.max.ms", "1e3", "not a number of type LONG"),
        ("unclean.leader.election.enable", "yes", "expected true or false"),
        ("auto.leader.rebalance.enable", "1", "expected true or false"),
        ("leader.imbalance.check.interval.seconds", "0", "must be at least 1"),
        ("leader.imbalance.per.broker.percentage", "101", "must be at most 100"),
        ("log.retention.check.interval.ms", "0", "must be at least 1"),
        ("zookeeper.session.timeout.ms", "0", "must be at least 1"),
        ("zookeeper.connect", "  ", "zookeeper.connect"),
        ("log.dirs", " , ", "no directory"),
    ],
)
def test_bad_value(key: str, value: str, message: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        from_props({key: value})
    text = str(info.value)
    assert message in text
    assert key in text
    assert "\n" not in text
    assert info.value.code is ErrorCode.INVALID_CONFIG


def test_bad_value_message_names_key_and_value() -> None:
    with pytest.raises(InvalidConfigError) as info:
        from_props({"num.partitions": "three"})
    assert info.value.message == (
        "invalid value 'three' for configuration num.partitions: not a number of type INT"
    )


@pytest.mark.parametrize("missing", ["broker.id", "zookeeper.connect"])
def test_required_keys(missing: str) -> None:
    props = {k: v for k, v in REQUIRED.items() if k != missing}
    with pytest.raises(InvalidConfigError, match=f"missing required configuration {missing}"):
        BrokerConfig.from_properties(props)


def test_replica_fetch_wait_must_fit_the_socket_timeout_and_lag_time() -> None:
    with pytest.raises(InvalidConfigError, match=re.escape("replica.socket.timeout.ms")):
        from_props({"replica.fetch.wait.max.ms": "5000", "replica.socket.timeout.ms": "1000"})
    with pytest.raises(InvalidConfigError, match=re.escape("replica.lag.time.max.ms")):
        from_props({"replica.fetch.wait.max.ms": "5000", "replica.lag.time.max.ms": "1000"})


def test_built_in_code_is_held_to_the_same_rules() -> None:
    config = BrokerConfig(broker_id=2, zookeeper_connect="zk:2181")
    assert config.advertised_listeners[0].host == "broker1.example.com"
    assert config.zookeeper_connection_timeout_ms == config.zookeeper_session_timeout_ms
    with pytest.raises(InvalidConfigError, match=re.escape("min.insync.replicas")):
        dataclasses.replace(config, log=dataclasses.replace(config.log, min_insync_replicas=0))


# --- unknown keys, immutability, describe -------------------------------------------------------


def test_unknown_keys_are_kept_and_warned_about() -> None:
    with capture_logs() as logs:
        config = from_props({"num.partitons": "3", "log.cleaner.threads": "2"})
    assert config.unknown == {"num.partitons": "3"}
    assert config.num_partitions == 1
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert warnings == [
        {
            "event": "config.unknown_key",
            "key": "num.partitons",
            "did_you_mean": "num.partitions",
            "log_level": "warning",
        }
    ]


def test_immutable() -> None:
    config = from_props({"unknown.key": "x"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.num_partitions = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.unknown["other"] = "y"  # type: ignore[index]
    assert hash(config) == hash(from_props({"unknown.key": "x"}))


def test_describe() -> None:
    config = from_props(
        {
            "num.partitions": "1",  # written out, equal to the default: still "set"
            "listeners": "PLAINTEXT://kafka-1:9092",
            "log.retention.hours": "24",
            "log.dir": "/data",
            "mystery": "1",
        }
    )
    described = config.describe()
    STATIC, DEFAULT = ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG
    assert described["broker.id"] == ("1", STATIC)
    assert described["num.partitions"] == ("1", STATIC)
    assert described["default.replication.factor"] == ("1", DEFAULT)
    assert described["unclean.leader.election.enable"] == ("false", DEFAULT)
    assert described["listeners"] == ("PLAINTEXT://kafka-1:9092", STATIC)
    assert described["advertised.listeners"] == ("PLAINTEXT://kafka-1:9092", DEFAULT)
    assert described["log.dirs"] == ("/data", STATIC)
    assert described["broker.rack"] == (None, DEFAULT)
    assert described["log.retention.ms"] == (str(24 * 3600 * 1000), STATIC)
    assert described["log.segment.bytes"] == (str(LogConfig().segment_bytes), DEFAULT)
    assert described["message.max.bytes"] == ("1048588", DEFAULT)
    assert "mystery" not in described
    assert list(described) == sorted(described)


# --- the Kafka-protocol listeners ---------------------------------------------------------------


def test_no_kafka_listener_by_default() -> None:
    config = from_props({})
    assert config.kafka_listeners == ()
    assert config.kafka_advertised_listeners == ()
    assert config.registered_endpoints == config.advertised_listeners
    assert config.socket_request_max_bytes == 104_857_600
    assert config.connections_max_idle_ms == 600_000


def test_kafka_listeners_are_registered_after_the_grpc_ones() -> None:
    config = from_props(
        {
            "listeners": "PLAINTEXT://:9092",
            "kafka.listeners": "KAFKA://:19092",
            "kafka.advertised.listeners": "KAFKA://127.0.0.1:19092",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,KAFKA:PLAINTEXT",
        }
    )
    assert config.kafka_listeners == (EndPoint("KAFKA", "", 19092, "PLAINTEXT"),)
    assert config.kafka_bind_addresses == ("0.0.0.0:19092",)
    assert [e.connection_string for e in config.registered_endpoints] == [
        "PLAINTEXT://broker1.example.com:9092",
        "KAFKA://127.0.0.1:19092",
    ]


def test_kafka_advertised_listeners_default_to_kafka_listeners_with_the_hostname() -> None:
    config = from_props(
        {
            "kafka.listeners": "KAFKA://:19092",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,KAFKA:PLAINTEXT",
        }
    )
    assert config.kafka_advertised_listeners == (
        EndPoint("KAFKA", "broker1.example.com", 19092, "PLAINTEXT"),
    )


def test_kafka_listeners_from_the_environment() -> None:
    props = properties_from_environ(
        {"KAFKA_KAFKA_LISTENERS": "KAFKA://:19092", "KAFKA_SOCKET_REQUEST_MAX_BYTES": "1000"}
    )
    assert props == {"kafka.listeners": "KAFKA://:19092", "socket.request.max.bytes": "1000"}


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"kafka.listeners": "PLAINTEXT://:19092"},
            "listener PLAINTEXT is also in listeners",
        ),
        (
            {
                "kafka.listeners": "KAFKA://:9092",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,KAFKA:PLAINTEXT",
            },
            "port 9092 is also in listeners",
        ),
        ({"kafka.listeners": "KAFKA://:19092"}, "KAFKA is not in listener.security.protocol.map"),
        (
            {
                "kafka.listeners": "KAFKA://:19092",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,KAFKA:TLS",
            },
            "security protocol TLS: must be one of PLAINTEXT, SASL_PLAINTEXT, SASL_SSL, SSL",
        ),
        (
            {"kafka.advertised.listeners": "KAFKA://h:19092"},
            "kafka.listeners is empty",
        ),
        (
            {
                "kafka.listeners": "KAFKA://:19092",
                "kafka.advertised.listeners": "OTHER://h:19092",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,KAFKA:PLAINTEXT,"
                "OTHER:PLAINTEXT",
            },
            "must be among those of kafka.listeners",
        ),
        (
            {
                "kafka.listeners": "KAFKA://:19092",
                "kafka.advertised.listeners": "KAFKA://0.0.0.0:19092",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,KAFKA:PLAINTEXT",
            },
            "non-routable address 0.0.0.0",
        ),
        ({"socket.request.max.bytes": "0"}, "must be at least 1"),
    ],
)
def test_bad_kafka_listeners(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=re.escape(message)):
        from_props(props)


def test_a_misspelt_log_key_is_warned_about_with_the_key_it_meant() -> None:
    with capture_logs() as logs:
        config = from_props({"log.retention.hour": "1", "log.preallocate": "true"})
    assert config.unknown == {"log.retention.hour": "1"}  # Kafka's log.preallocate: quiet
    assert config.log.retention_ms == 7 * 24 * 3600 * 1000
    warned = [e for e in logs if e["event"] == "config.unknown_key"]
    assert [(e["key"], e["did_you_mean"]) for e in warned] == [
        ("log.retention.hour", "log.retention.hours")
    ]


def test_typed_keys_that_were_read_from_the_unknown_bag() -> None:
    config = from_props(
        {
            "replica.fetch.backoff.ms": "250",
            "group.min.session.timeout.ms": "1000",
            "group.max.session.timeout.ms": "60000",
            "offset.metadata.max.bytes": "100",
        }
    )
    assert config.unknown == {}
    assert (
        config.replica_fetch_backoff_ms,
        config.group_min_session_timeout_ms,
        config.group_max_session_timeout_ms,
        config.offset_metadata_max_bytes,
    ) == (250, 1000, 60000, 100)
    with pytest.raises(InvalidConfigError, match=re.escape("replica.fetch.backoff.ms")):
        from_props({"replica.fetch.backoff.ms": "soon"})


# --- dynamic broker configs ---------------------------------------------------------------------


def test_dynamic_configs_lay_over_the_static_ones_per_broker_first() -> None:
    static = from_props({"log.retention.hours": "24", "min.insync.replicas": "2"})
    config = static.with_dynamic(
        {"log.retention.ms": "60000", "min.insync.replicas": "1"},
        {"min.insync.replicas": "3", "log.cleaner.threads": "2"},
    )
    assert config.log.retention_ms == 60000
    assert config.min_insync_replicas == 3
    assert config.log_cleaner_threads == 2
    described = config.describe()
    assert described["log.retention.ms"] == ("60000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert described["min.insync.replicas"] == ("3", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert described["num.partitions"] == ("1", ConfigSource.DEFAULT_CONFIG)
    assert config.synonyms(["min.insync.replicas"]) == [
        ("min.insync.replicas", "3", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("min.insync.replicas", "1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("min.insync.replicas", "2", ConfigSource.STATIC_BROKER_CONFIG),
    ]
    # Laid again over the same static config: a removed dynamic key goes back to static.
    again = config.with_dynamic({}, {})
    assert again.min_insync_replicas == 2
    assert again.log.retention_ms == 24 * 3600 * 1000


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"broker.id": "3"}, "Cannot update these configs dynamically: Set(broker.id)"),
        ({"log.dirs": "/x", "zookeeper.connect": "z"}, "Set(log.dirs, zookeeper.connect)"),
        ({"no.such.key": "1"}, "Unknown broker configs: Set(no.such.key)"),
        ({"log.retention.ms": "soon"}, "log.retention.ms"),
        ({"min.insync.replicas": "0"}, "min.insync.replicas"),
        ({"unclean.leader.election.enable": "maybe"}, "unclean.leader.election.enable"),
    ],
)
def test_dynamic_updates_refused(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=re.escape(message)):
        from_props({}).with_dynamic(props, {})


# --- replication over a Kafka listener (KIP-291's control plane) ------------------------------

_KAFKA_REPLICATION = {
    "listeners": "CONTROL://kafka-1:19091",
    "kafka.listeners": "REPLICATION://kafka-1:19092,CLIENT://kafka-1:9092",
    "listener.security.protocol.map": ("CONTROL:PLAINTEXT,REPLICATION:PLAINTEXT,CLIENT:PLAINTEXT"),
    "inter.broker.listener.name": "REPLICATION",
}


def test_followers_fetch_on_a_kafka_listener_and_the_controller_uses_its_own() -> None:
    config = from_props({**_KAFKA_REPLICATION, "control.plane.listener.name": "control"})
    assert config.replicates_over_kafka
    assert config.inter_broker_endpoint == EndPoint("REPLICATION", "kafka-1", 19092, "PLAINTEXT")
    assert config.control_plane_listener == "CONTROL"


def test_by_default_the_controller_uses_the_grpc_inter_broker_listener() -> None:
    config = from_props({"listeners": "PLAINTEXT://kafka-1:9092"})
    assert not config.replicates_over_kafka
    assert config.control_plane_listener_name is None
    assert config.control_plane_listener == "PLAINTEXT"
    explicit = from_props(
        {
            "listeners": "PLAINTEXT://kafka-1:9092,CONTROL://kafka-1:9093",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROL:PLAINTEXT",
            "control.plane.listener.name": "CONTROL",
        }
    )
    assert explicit.control_plane_listener == "CONTROL"
    assert not explicit.replicates_over_kafka


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        # a Kafka inter-broker listener, and no gRPC listener named for the controller
        (
            {},
            "invalid value 'REPLICATION' for configuration inter.broker.listener.name: a Kafka "
            "listener carries replication only; set control.plane.listener.name to a gRPC "
            "listener in advertised.listeners for the controller's requests (CONTROL)",
        ),
        (
            {"control.plane.listener.name": "CLIENT"},
            "invalid value 'CLIENT' for configuration control.plane.listener.name: must be the "
            "name of a gRPC listener in advertised.listeners (CONTROL)",
        ),
        (
            {"inter.broker.listener.name": "CONTROL", "control.plane.listener.name": "CONTROL"},
            "invalid value 'CONTROL' for configuration control.plane.listener.name: must differ "
            "from inter.broker.listener.name (leave it unset to send the controller's requests "
            "over the inter-broker listener)",
        ),
        (
            {"inter.broker.listener.name": "NOWHERE", "control.plane.listener.name": "CONTROL"},
            "invalid value 'NOWHERE' for configuration inter.broker.listener.name: must be the "
            "name of a listener in advertised.listeners (CONTROL) or kafka.advertised.listeners "
            "(CLIENT, REPLICATION)",
        ),
    ],
)
def test_replication_listener_errors_are_one_line(extra: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        from_props({**_KAFKA_REPLICATION, **extra})
    assert raised.value.message == message
    assert "\n" not in str(raised.value)


# --- connection limits and the request pool -----------------------------------------------------


def test_connection_limit_defaults_are_kafkas() -> None:
    config = from_props({})
    assert config.max_connections == 2**31 - 1
    assert config.max_connections_per_ip == 2**31 - 1
    assert config.max_connections_per_ip_overrides == {}
    assert config.queued_max_request_bytes == -1


def test_connection_limits_parsed() -> None:
    config = from_props(
        {
            "max.connections": "500",
            "max.connections.per.ip": "0",
            "max.connections.per.ip.overrides": "127.0.0.1:20, Broker1.example.com:5,[::1]:3",
            "queued.max.request.bytes": "209715200",
        }
    )
    assert config.max_connections == 500
    assert config.max_connections_per_ip == 0
    assert config.max_connections_per_ip_overrides == {
        "127.0.0.1": 20,
        "broker1.example.com": 5,
        "::1": 3,
    }
    assert config.queued_max_request_bytes == 209_715_200
    described = config.describe()
    assert described["max.connections.per.ip.overrides"][0] == (
        "127.0.0.1:20,broker1.example.com:5,::1:3"
    )


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"max.connections": "-1"}, "must be at least 0"),
        ({"max.connections.per.ip": "-5"}, "must be at least 0"),
        ({"max.connections.per.ip": "0"}, "0 only when max.connections.per.ip.overrides is set"),
        ({"max.connections.per.ip.overrides": "127.0.0.1"}, "is not of the form host:count"),
        ({"max.connections.per.ip.overrides": "h:many"}, "is not of the form host:count"),
        ({"max.connections.per.ip.overrides": "bad/host:3"}, "is not of the form host:count"),
        (
            {"queued.max.request.bytes": "1000", "socket.request.max.bytes": "2000"},
            "must be at least socket.request.max.bytes (2000) or -1",
        ),
        ({"queued.max.request.bytes": "lots"}, "not a number of type LONG"),
    ],
)
def test_bad_connection_limits(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=re.escape(message)):
        from_props(props)


# --- SASL keys ---------------------------------------------------------------------------------

_SASL_BASE = {
    "broker.id": "1",
    "zookeeper.connect": "zk:2181",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "kafka.listeners": "SASL://127.0.0.1:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
}
_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret";'
)


def test_sasl_keys_listener_overrides_and_secrets_kept_out_of_sight() -> None:
    config = BrokerConfig.from_properties(
        {
            **_SASL_BASE,
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "listener.name.sasl.sasl.enabled.mechanisms": "PLAIN, SCRAM-SHA-512",
            "listener.name.sasl.plain.sasl.jaas.config": _JAAS,
            "sasl.jaas.config": "x.Y required;",
        }
    )
    assert config.sasl_enabled_mechanisms == ("SCRAM-SHA-256",)
    assert config.sasl_enabled_mechanisms_for("SASL") == ("PLAIN", "SCRAM-SHA-512")
    assert config.sasl_enabled_mechanisms_for("OTHER") == ("SCRAM-SHA-256",)
    assert config.sasl_jaas_config_for("SASL", "PLAIN") == (
        "listener.name.sasl.plain.sasl.jaas.config",
        _JAAS,
    )
    assert config.sasl_jaas_config_for("SASL", "SCRAM-SHA-512") == (
        "sasl.jaas.config",
        "x.Y required;",
    )
    assert config.unknown == {}
    assert "admin-secret" not in repr(config)
    described = config.describe()
    assert described["sasl.enabled.mechanisms"][0] == "SCRAM-SHA-256"
    assert not any("jaas" in key for key in described)


def test_a_misspelt_secret_key_is_kept_but_never_in_the_repr() -> None:
    """An unknown key is kept with its value (as Kafka does), and a misspelt password key's
    value is a password all the same: the repr (a traceback's, a debug line's) leaves it out,
    and the warning names the key only."""
    with capture_logs() as logs:
        config = BrokerConfig.from_properties(
            {**_SASL_BASE, "ssl.key.pasword": "typo-secret-3e1", "sasl.enabled.mechanisms": "PLAIN",
             "sasl.jaas.config": _JAAS}
        )  # fmt: skip
    assert config.unknown == {"ssl.key.pasword": "typo-secret-3e1"}
    assert "typo-secret-3e1" not in repr(config)
    assert "typo-secret-3e1" not in repr(logs)
    assert "typo-secret-3e1" not in repr(config.describe())


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({}, "SASL mechanism GSSAPI of listener SASL is not supported"),
        ({"sasl.enabled.mechanisms": "OAUTHBEARER"}, "OAUTHBEARER of listener SASL"),
        ({"sasl.enabled.mechanisms": ""}, "enables no SASL mechanism"),
        ({"sasl.enabled.mechanisms": "PLAIN"}, "enables PLAIN but has no JAAS config"),
        (
            {
                "sasl.enabled.mechanisms": "PLAIN",
                "sasl.jaas.config": _JAAS,
                "connections.max.reauth.ms": "1000",
            },
            "re-authentication (KIP-368) is not supported",
        ),
        (
            {
                "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "inter.broker.listener.name": "SASL",
                "control.plane.listener.name": "PLAINTEXT",
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
            },
            "sasl.mechanism.inter.broker.protocol PLAIN must be included",
        ),
        (
            {
                "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "inter.broker.listener.name": "SASL",
                "control.plane.listener.name": "PLAINTEXT",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
            },
            "with this broker's username and password",
        ),
    ],
)
def test_bad_sasl_configs(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=re.escape(message)) as failed:
        BrokerConfig.from_properties({**_SASL_BASE, **props})
    assert "admin-secret" not in str(failed.value)


# --- TLS and per-listener keys ------------------------------------------------------------------

_TLS_LISTENERS = {
    "listeners": "PLAINTEXT://:9092,SSL://:9093",
    "kafka.listeners": "KAFKA_SSL://:19093,SASL_KAFKA://:19094",
    "listener.security.protocol.map": (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,KAFKA_SSL:SASL_SSL,SASL_KAFKA:SASL_PLAINTEXT"
    ),
    "ssl.keystore.location": "/etc/kafka/broker.pem",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256",  # Kafka's default, GSSAPI, is not served
}


def test_tls_and_sasl_listeners_take_their_protocols() -> None:
    config = from_props(_TLS_LISTENERS)
    assert [e.security_protocol for e in config.listeners] == ["PLAINTEXT", "SSL"]
    assert [e.security_protocol for e in config.kafka_listeners] == ["SASL_SSL", "SASL_PLAINTEXT"]
    assert config.listener_config("kafka_ssl").uses_tls
    assert not config.listener_config("SASL_KAFKA").uses_tls


def test_a_listener_key_beats_the_broker_key_for_that_listener_only() -> None:
    config = from_props(
        {
            **_TLS_LISTENERS,
            "ssl.client.auth": "requested",
            "listener.name.ssl.ssl.client.auth": "required",
            "listener.name.ssl.ssl.keystore.location": "/etc/kafka/ssl.pem",
            "listener.name.kafka_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        }
    )
    ssl_listener = config.listener_config("SSL")
    assert ssl_listener.ssl.client_auth == "required"
    assert ssl_listener.ssl.keystore_location == "/etc/kafka/ssl.pem"
    kafka = config.listener_config("KAFKA_SSL")
    assert kafka.ssl.client_auth == "requested"
    assert kafka.ssl.keystore_location == "/etc/kafka/broker.pem"
    assert kafka.get("sasl.enabled.mechanisms") == "SCRAM-SHA-512"
    assert kafka.get("sasl.jaas.config", "broker-wide") == "broker-wide"
    assert config.unknown == {}  # neither the ssl.* keys nor listener.name.* are unknown


def test_a_tls_listener_without_a_key_store_names_the_key() -> None:
    props = {**_TLS_LISTENERS}
    del props["ssl.keystore.location"]
    with pytest.raises(InvalidConfigError, match=r"SSL .* no key store: set ssl\.keystore"):
        from_props(props)
    # given for that listener alone, it is enough
    config = from_props(
        {**props, "listeners": "PLAINTEXT://:9092,SSL://:9093", "kafka.listeners": ""}
        | {"listener.name.ssl.ssl.keystore.location": "/k.pem"}
    )
    assert config.listener_config("SSL").ssl.has_key_store


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type: only PEM stores are supported"),
        ({"ssl.truststore.type": "PKCS12"}, "only PEM stores are supported"),
        ({"ssl.client.auth": "maybe"}, "must be one of none, requested, required"),
        ({"listener.name.ssl.ssl.client.auth": "x"}, "listener.name.ssl.ssl.client.auth"),
        ({"ssl.enabled.protocols": "TLSv1.1"}, "only TLSv1.2 and TLSv1.3 are supported"),
        ({"ssl.protocol": "SSLv3"}, "ssl.protocol"),
        ({"ssl.endpoint.identification.algorithm": "ldap"}, "must be one of https, empty"),
        ({"ssl.keystore.key": "-----BEGIN PRIVATE KEY-----"}, "set ssl.keystore.location or"),
        ({"listener.name.ssl": "x"}, "expected listener.name.<listener>.<key>"),
    ],
)
def test_bad_tls_keys(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=re.escape(message)):
        from_props({**_TLS_LISTENERS, **props})


def test_describe_never_shows_a_password_or_an_inline_key() -> None:
    config = from_props(
        {**_TLS_LISTENERS, "ssl.key.password": "s3cret", "ssl.client.auth": "required"}
    )
    described = config.describe()
    assert described["ssl.key.password"] == (None, ConfigSource.STATIC_BROKER_CONFIG)
    assert described["ssl.client.auth"] == ("required", ConfigSource.STATIC_BROKER_CONFIG)
    assert "s3cret" not in repr(config)
