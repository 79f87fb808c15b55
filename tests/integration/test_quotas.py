"""Client quotas (KIP-13, KIP-55, KIP-219) on a real 3-broker cluster, with Kafka's clients.

Alter/DescribeClientQuotas go raw (kio's types on one socket): neither kafka-python nor
confluent-kafka's AdminClient has them. The quota is written once, read back on another
broker and from ZooKeeper, and reaches every broker's ClientQuotaManager within a second (the
broker's ``client_quota_updated`` log line). A 1 MB/s producer_byte_rate holds a
confluent-kafka and a kafka-python producer (each its own client-id) to it over 22 s, two of
the rate's 11-second spans, and both clients see throttle time; a 1 MB/s consumer_byte_rate
holds a kafka-python consumer likewise; an aiokafka producer, which reads no throttle time, is
held by the broker's muting alone; the minikafka producer over gRPC by its client_id. KIP-55's
order: a user's quota beats a client-id default.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import subprocess
import sys
import time
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import aiokafka
import confluent_kafka
import kafka
import pytest

from minikafka.broker.server.kafka.schema import Entity
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka, batch, produce_fields

# Rates measured over 20 s: alone, not beside other tests (scripts/test.sh).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, PRODUCE, METADATA = 48, 49, 0, 3
METADATA_ALL = {
    "topics": None,
    "allow_auto_topic_creation": False,
    "include_topic_authorized_operations": False,
}
MB = 1 << 20
RUN_S = 20.0
# Kafka's default rate spans 11 one-second samples and lets a new client burst ten windows'
# worth before the first throttle: 10 MB at 1 MB/s, then about 11 MB every 11 s, a saw-tooth
# whose phase alone moves a 20-second average by a third. Two samples (a broker key Kafka
# has) keep the same mechanism with bursts of one window, so 20 s measure the quota itself;
# the default windows' long-run average is checked on a fake clock (tests/unit).
WINDOWS = {"quota.window.num": "2", "quota.window.size.seconds": "1"}


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> Cluster:
    return cluster_factory(n_brokers=3, overrides=WINDOWS)


def raw(address: str, api_key: int, version: int, values: Mapping[str, Any]) -> Entity:
    with RawKafka(address, timeout_s=15) as connection:
        return connection.call(api_key, version, values)


def alter(
    cluster: Cluster,
    entity: Mapping[str, str | None],
    ops: Mapping[str, float | None],
    *,
    broker_id: int = 1,
    validate_only: bool = False,
) -> Entity:
    """One AlterClientQuotas entry (None as a value: remove the key); the entry's answer."""
    response = raw(
        cluster.brokers[broker_id].kafka_address,
        ALTER_CLIENT_QUOTAS,
        1,
        {
            "entries": [
                {
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                    "ops": [
                        {"key": k, "value": 0.0 if v is None else v, "remove": v is None}
                        for k, v in ops.items()
                    ],
                }
            ],
            "validate_only": validate_only,
        },
    )
    (entry,) = response.entries
    return entry


def describe(
    cluster: Cluster, components: list[dict[str, Any]], *, broker_id: int = 2, strict: bool = False
) -> Entity:
    return raw(
        cluster.brokers[broker_id].kafka_address,
        DESCRIBE_CLIENT_QUOTAS,
        1,
        {"components": components, "strict": strict},
    )


def wait_applied(cluster: Cluster, entity_path: str, count: int, timeout_s: float = 1.0) -> float:
    """Until every broker logged ``count`` updates of the entity; how long that took."""
    started = time.monotonic()
    while True:
        seen = [
            sum(1 for e in b.log_events("client_quota_updated") if e["entity"] == entity_path)
            for b in cluster.brokers.values()
        ]
        if all(n >= count for n in seen):
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"{entity_path} applied on brokers {seen}, wanted {count} each")
        time.sleep(0.05)


def test_alter_and_describe_reach_every_broker(cluster: Cluster) -> None:
    ok = alter(cluster, {"client-id": "app"}, {"producer_byte_rate": 1048576.0})
    assert ok.error_code == ErrorCode.NONE and ok.error_message is None
    wait_applied(cluster, "clients/app", 1)
    assert json.loads(cluster.zk.client.get("/config/clients/app")[0]) == {
        "version": 1,
        "config": {"producer_byte_rate": "1048576"},
    }
    # A user's client-id and a default user: Kafka's paths.
    alter(cluster, {"user": "alice", "client-id": None}, {"request_percentage": 50.0})
    alter(cluster, {"user": None}, {"consumer_byte_rate": 2048.0})
    assert cluster.zk.client.exists("/config/users/alice/clients/<default>") is not None
    assert cluster.zk.client.exists("/config/users/<default>") is not None
    wait_applied(cluster, "users/alice/clients/<default>", 1)

    answer = describe(cluster, [{"entity_type": "client-id", "match_type": 0, "match": "app"}])
    assert answer.error_code == ErrorCode.NONE
    assert [
        (
            [(e.entity_type, e.entity_name) for e in entry.entity],
            [(v.key, v.value) for v in entry.values],
        )
        for entry in answer.entries
    ] == [([("client-id", "app")], [("producer_byte_rate", 1048576.0)])]
    users = describe(cluster, [{"entity_type": "user", "match_type": 2, "match": None}])
    assert sorted(
        [
            tuple((e.entity_type, e.entity_name or "") for e in entry.entity)
            for entry in users.entries
        ]
    ) == [(("user", ""),), (("user", "alice"), ("client-id", ""))]
    strict = describe(
        cluster, [{"entity_type": "user", "match_type": 1, "match": None}], strict=True
    )
    assert [[(v.key, v.value) for v in e.values] for e in strict.entries] == [
        [("consumer_byte_rate", 2048.0)]
    ]

    # Kafka's validation: INVALID_REQUEST, nothing written.
    for entity, ops in [
        ({"client-id": "app"}, {"no_such_quota": 1.0}),
        ({"client-id": "app"}, {"producer_byte_rate": 1.5}),
        ({"client-id": "app"}, {"producer_byte_rate": -1.0}),
        ({"topic": "t"}, {"producer_byte_rate": 1.0}),
    ]:
        refused = alter(cluster, entity, ops)
        assert refused.error_code == ErrorCode.INVALID_REQUEST, (entity, ops)
        assert refused.error_message
    bad_filter = describe(cluster, [{"entity_type": "user", "match_type": 0, "match": None}])
    assert bad_filter.error_code == ErrorCode.INVALID_REQUEST
    validated = alter(
        cluster, {"client-id": "dry"}, {"producer_byte_rate": 10.0}, validate_only=True
    )
    assert validated.error_code == ErrorCode.NONE
    assert cluster.zk.client.exists("/config/clients/dry") is None

    # A change reaches every broker within a second.
    alter(cluster, {"client-id": "app"}, {"producer_byte_rate": 2097152.0})
    assert wait_applied(cluster, "clients/app", 2, timeout_s=1.0) < 1.0
    # request_percentage: a tiny share of a handler's time throttles even Metadata requests
    # (each on a connection of its own: the throttled one is muted after its answer).
    alter(cluster, {"client-id": "raw"}, {"request_percentage": 0.001})
    wait_applied(cluster, "clients/raw", 1)
    throttles = [
        raw(cluster.brokers[0].kafka_address, METADATA, 12, METADATA_ALL).throttle_time
        for _ in range(3)
    ]
    assert max(throttles).total_seconds() > 0, throttles
    removed = alter(cluster, {"client-id": "app"}, {"producer_byte_rate": None})
    assert removed.error_code == ErrorCode.NONE
    assert (
        describe(cluster, [{"entity_type": "client-id", "match_type": 0, "match": "app"}]).entries
        == ()
    )
    _check_configs_cli(cluster)


def _produce_confluent(cluster: Cluster, topic: str, result: dict[str, Any]) -> None:
    throttles: list[int] = []

    def on_stats(text: str) -> None:
        stats = json.loads(text)
        for broker in stats["brokers"].values():
            throttles.append(int(broker["throttle"]["max"]))

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "client.id": "ck-app",
            "acks": "all",
            "linger.ms": 5,
            "statistics.interval.ms": 500,
            # A small queue: what is still queued at the end is not waited for at 1 MB/s.
            "queue.buffering.max.kbytes": 1024,
            "stats_cb": on_stats,
        }
    )
    acked = [0]

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked[0] += len(msg.value())

    value = b"c" * 10_000
    started = time.monotonic()
    while time.monotonic() - started < RUN_S:
        try:
            producer.produce(topic, value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    elapsed = time.monotonic() - started
    result["confluent_rate"] = acked[0] / elapsed
    producer.purge()
    producer.flush(10)
    result["confluent_throttle_ms"] = max(throttles, default=0)


def _produce_kafka_python(cluster: Cluster, topic: str, result: dict[str, Any]) -> None:
    producer = kafka.KafkaProducer(
        bootstrap_servers=cluster.kafka_bootstrap_servers,
        client_id="kp-app",
        acks="all",
        # Big requests: kafka-python resumes a throttled connection on its sender's next turn,
        # so a throttle per 16 KB request (its default) would cost more than the throttle.
        batch_size=256 << 10,
        linger_ms=20,
        max_block_ms=60_000,
    )
    acked = [0]

    def delivered(metadata: Any) -> None:
        acked[0] += metadata.serialized_value_size

    value = b"k" * 10_000
    started = time.monotonic()
    sent = 0
    while time.monotonic() - started < RUN_S:
        if sent - acked[0] >= 2 * MB:  # kafka-python 3's queue has no bound: keep one here
            time.sleep(0.005)
            continue
        producer.send(topic, value).add_callback(delivered)
        sent += len(value)
    elapsed = time.monotonic() - started
    result["kafka_python_rate"] = acked[0] / elapsed
    metrics = producer.metrics()
    result["kafka_python_throttle_ms"] = max(
        (group.get("throttle-time-max") or 0.0 for group in metrics.values()), default=0.0
    )
    producer.close(timeout=10)  # at most 2 MB still to go


def test_user_quota_beats_client_id_default(cluster: Cluster) -> None:
    admin = cluster.admin()
    from minikafka.client.admin import NewTopic

    admin.create_topics([NewTopic("precedence", 1, 3)])
    leader = cluster.brokers[cluster.leader("precedence", 0)]
    # A tiny client-id default (100 KB/s: 1 MB over the rate's first ten windows) ...
    alter(cluster, {"client-id": None}, {"producer_byte_rate": 100_000.0})
    # ... and a big quota for the user every PLAINTEXT connection is: ANONYMOUS.
    alter(cluster, {"user": "ANONYMOUS"}, {"producer_byte_rate": 100_000_000.0})
    wait_applied(cluster, "users/ANONYMOUS", 1)
    records = batch([b"u" * 500_000])

    def throttles(n: int) -> list[int]:
        with RawKafka(leader.kafka_address, timeout_s=15) as connection:
            answers = [
                connection.call(PRODUCE, 8, produce_fields("precedence", records)) for _ in range(n)
            ]
        assert all(
            p.error_code == 0 for a in answers for t in a.responses for p in t.partition_responses
        )
        return [int(a.throttle_time.total_seconds() * 1000) for a in answers]

    assert throttles(4) == [0, 0, 0, 0]  # 2 MB: the user's quota holds, not the default
    alter(cluster, {"user": "ANONYMOUS"}, {"producer_byte_rate": None})
    wait_applied(cluster, "users/ANONYMOUS", 2)
    assert max(throttles(4)) > 0  # now the client-id default throttles


def _consume_confluent(cluster: Cluster, topic: str, result: dict[str, Any]) -> None:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "client.id": "ck-consumer",
            "group.id": "ck-quota",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            # Small fetches: a throttled fetch is answered empty (Kafka's way), so the
            # smaller each, the less of the quota a throttle leaves unused.
            "max.partition.fetch.bytes": 64 << 10,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    got = 0
    started = time.monotonic()
    while time.monotonic() - started < RUN_S:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            got += len(message.value() or b"")
    result["confluent_rate"] = got / (time.monotonic() - started)
    consumer.close()


def _consume_kafka_python(cluster: Cluster, topic: str, result: dict[str, Any]) -> None:
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=cluster.kafka_bootstrap_servers,
        client_id="kp-consumer",
        max_partition_fetch_bytes=64 << 10,
        fetch_max_bytes=64 << 10,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    partition = kafka.TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)
    got = 0
    started = time.monotonic()
    while time.monotonic() - started < RUN_S:
        for records in consumer.poll(timeout_ms=200).values():
            got += sum(len(r.value or b"") for r in records)
    result["kafka_python_rate"] = got / (time.monotonic() - started)
    result["kafka_python_throttle_ms"] = max(
        (group.get("throttle-time-max") or 0.0 for group in consumer.metrics().values()),
        default=0.0,
    )
    consumer.close()


def _prefill(cluster: Cluster, topic: str) -> None:
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "acks": "1",
            "linger.ms": 20,
            # Batches of 64 KB: a fetch answers at least one whole batch whatever its limits.
            "batch.size": 64 << 10,
        }
    )
    for _ in range(3_000):  # 30 MB: more than 20 s at 1 MB/s
        while True:
            try:
                producer.produce(topic, b"r" * 10_000)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0


def test_byte_rates_hold_producers_and_consumers_to_their_quotas(cluster: Cluster) -> None:
    """Four clients at once, each its own client-id and 1 MB/s quota, for 20 s: producers
    (producer_byte_rate) and consumers (consumer_byte_rate) of both libraries."""
    from minikafka.client.admin import NewTopic

    cluster.admin().create_topics(
        [NewTopic("quota-ck", 1, 3), NewTopic("quota-kp", 1, 3), NewTopic("quota-read", 1, 3)]
    )
    _prefill(cluster, "quota-read")
    for client_id, key in (
        ("ck-app", "producer_byte_rate"),
        ("kp-app", "producer_byte_rate"),
        ("ck-consumer", "consumer_byte_rate"),
        ("kp-consumer", "consumer_byte_rate"),
    ):
        assert alter(cluster, {"client-id": client_id}, {key: MB}).error_code == 0
        wait_applied(cluster, f"clients/{client_id}", 1)
    # Each client in a process of its own: as threads of this one, the kafka-python producer
    # held the GIL enough while throttled that the kafka-python consumer beside it read 0.6 of
    # its quota on a slower machine (it reads 3.7 MB/s alone) -- the test's own contention,
    # not the broker's throttling.
    context = multiprocessing.get_context("spawn")
    where = SimpleNamespace(kafka_bootstrap_servers=cluster.kafka_bootstrap_servers)
    with context.Manager() as manager:
        produced_shared, consumed_shared = manager.dict(), manager.dict()
        processes = [
            context.Process(target=target, args=(where, topic, shared))
            for target, topic, shared in (
                (_produce_confluent, "quota-ck", produced_shared),
                (_produce_kafka_python, "quota-kp", produced_shared),
                (_consume_confluent, "quota-read", consumed_shared),
                (_consume_kafka_python, "quota-read", consumed_shared),
            )
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join(120)
            if process.is_alive():
                process.kill()
        produced, consumed = dict(produced_shared), dict(consumed_shared)
    assert abs(produced["confluent_rate"] / MB - 1) < 0.10, produced
    assert abs(produced["kafka_python_rate"] / MB - 1) < 0.10, produced
    assert produced["confluent_throttle_ms"] > 0, produced
    assert produced["kafka_python_throttle_ms"] > 0, produced
    assert abs(consumed["confluent_rate"] / MB - 1) < 0.10, consumed
    assert abs(consumed["kafka_python_rate"] / MB - 1) < 0.10, consumed
    assert consumed["kafka_python_throttle_ms"] > 0, consumed
    # The broker's own count, per client-id (the entity the quota was set on).
    leader = cluster.leader("quota-ck", 0)
    throttled = cluster.metric(
        leader, "kafka_server_produce_throttle_time_total", user="", client_id="ck-app"
    )
    assert throttled is not None and throttled > 0
    # (the rate itself has gone back to 0 by now: the producers stopped windows ago)
    rate = cluster.metric(leader, "kafka_server_produce_byte_rate", user="", client_id="ck-app")
    assert rate is not None


def test_an_aiokafka_producer_is_held_to_its_quota(cluster: Cluster) -> None:
    """aiokafka reads no throttle_time_ms: the broker's muting alone (KIP-219: the answer at
    once, then nothing read from the connection for the throttle time) holds it to 1 MB/s."""
    from minikafka.client.admin import NewTopic

    cluster.admin().create_topics([NewTopic("quota-aio", 1, 3)])
    assert alter(cluster, {"client-id": "aio-app"}, {"producer_byte_rate": MB}).error_code == 0
    wait_applied(cluster, "clients/aio-app", 1)
    value = b"a" * 10_000

    async def produce() -> float:
        """The rate acknowledged over RUN_S, bytes a second."""
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=cluster.kafka_bootstrap_servers,
            client_id="aio-app",
            acks="all",
            linger_ms=5,
        )
        await producer.start()
        acked = [0]
        in_flight: set[asyncio.Future[Any]] = set()

        def delivered(future: asyncio.Future[Any]) -> None:
            in_flight.discard(future)
            if not future.cancelled() and future.exception() is None:
                acked[0] += len(value)

        started = time.monotonic()
        try:
            while time.monotonic() - started < RUN_S:
                if len(in_flight) >= 100:  # about 1 MB queued, as the other producers
                    await asyncio.sleep(0.01)
                    continue
                future = await producer.send("quota-aio", value)
                in_flight.add(future)
                future.add_done_callback(delivered)
            return acked[0] / (time.monotonic() - started)
        finally:
            await producer.stop()

    rate = asyncio.run(produce())
    assert abs(rate / MB - 1) < 0.10, rate
    throttled = cluster.metric(
        cluster.leader("quota-aio", 0),
        "kafka_server_produce_throttle_time_total",
        user="",
        client_id="aio-app",
    )
    assert throttled is not None and throttled > 0


def configs_cli(cluster: Cluster, *argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "minikafka", "configs"]
    command += ["--bootstrap-server", cluster.bootstrap_servers, *argv]
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)


def _check_configs_cli(cluster: Cluster) -> None:
    """minikafka configs on the same cluster (after the raw requests above)."""
    done = configs_cli(
        cluster, "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
        "--entity-name", "app", "--alter", "--add-config",
        "producer_byte_rate=1048576,consumer_byte_rate=2097152",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Completed updating config for user alice, client app.\n"
    done = configs_cli(
        cluster, "--entity-type", "clients", "--entity-default", "--alter",
        "--add-config", "request_percentage=25",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    wait_applied(cluster, "clients/<default>", 1)
    assert json.loads(cluster.zk.client.get("/config/users/alice/clients/app")[0])["config"] == {
        "producer_byte_rate": "1048576",
        "consumer_byte_rate": "2097152",
    }
    shown = configs_cli(
        cluster, "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
        "--entity-name", "app", "--describe",
    )  # fmt: skip
    assert shown.stdout == (
        "Quota configs for user-principal 'alice', client-id 'app' are "
        "consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0\n"
    )
    shown = configs_cli(cluster, "--entity-type", "clients", "--describe")
    assert "Quota configs for the default client-id are request_percentage=25.0\n" in shown.stdout
    refused = configs_cli(
        cluster, "--entity-type", "clients", "--entity-name", "app", "--alter",
        "--add-config", "producer_byte_rate=1.5",
    )  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error while executing config command : ")
    assert "Long" in refused.stderr and "Traceback" not in refused.stderr


def test_grpc_door_throttles_the_minikafka_producer(cluster: Cluster) -> None:
    """The gRPC door: the same manager. The minikafka client names itself by its client_id
    in each call's metadata, so the quota of that client-id holds it; its answers carry
    throttle_time_ms, the stream's next request waits, and the producer backs off."""
    from minikafka.client.admin import NewTopic
    from minikafka.client.producer.producer import Producer

    cluster.admin().create_topics([NewTopic("quota-grpc", 1, 3)])
    alter(cluster, {"client-id": "grpc-app"}, {"producer_byte_rate": MB})
    wait_applied(cluster, "clients/grpc-app", 1)
    producer = Producer(
        cluster.bootstrap_servers, batch_size=256 << 10, linger_ms=20, client_id="grpc-app"
    )
    acked = [0]
    value = b"g" * 10_000
    started = time.monotonic()
    sent = 0
    while time.monotonic() - started < 10.0:
        if sent - acked[0] >= 2 * MB:
            time.sleep(0.005)
            continue
        producer.send("quota-grpc", value).add_callback(
            lambda _: acked.__setitem__(0, acked[0] + len(value))
        )
        sent += len(value)
    rate = acked[0] / (time.monotonic() - started)
    producer.close(10)
    assert abs(rate / MB - 1) < 0.15, rate
    leader = cluster.leader("quota-grpc", 0)
    throttled = cluster.metric(
        leader, "kafka_server_produce_throttle_time_total", user="", client_id="grpc-app"
    )
    assert throttled is not None and throttled > 0
    # a client of another client-id is not held by that quota
    other = Producer(cluster.bootstrap_servers, client_id="other-app")
    try:
        other.send("quota-grpc", b"x").result(30)
    finally:
        other.close(10)
    assert cluster.metric(
        leader, "kafka_server_produce_throttle_time_total", user="", client_id="other-app"
    ) in (None, 0)
