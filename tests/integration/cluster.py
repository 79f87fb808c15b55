"""Real broker processes on 127.0.0.1 for integration tests, plus raw produce/fetch helpers.

    cluster = Cluster(zk_connect, tmp_path, n_brokers=3, overrides={"min.insync.replicas": "2"})
    cluster.start_all(); cluster.wait_until_serving()
    with cluster.admin() as admin: ...                 # client.admin.AdminClient
    cluster.produce("t", 0, [b"a", b"b"], acks=-1)     # ProduceResult(error, base_offset, ...)
    cluster.kill(1); cluster.start(1)                  # SIGKILL; restart (same config and dirs)
                                                       # once its old session has expired
    cluster.start(1, wait_for_expiry=False)            # restart now (the broker waits for it)
    cluster.stop(2)                                    # SIGTERM (controlled shutdown), waits
    cluster.pause(0); cluster.resume(0)                # SIGSTOP / SIGCONT
    cluster.fetch_all("t", 0)                          # records up to the high watermark
    cluster.replica_state(1, "t", 0)                   # LEO, HW and batch bytes read from disk
    cluster.close()                                    # kills whatever still runs

Each broker also serves the Kafka protocol on ``kafka_port`` (``kafka_bootstrap_servers``)
and Prometheus metrics on ``metrics_port`` (``cluster.metrics(1)``: {(name, labels): value}).
Followers replicate over the Kafka listener (inter.broker.listener.name=KAFKA, the controller's
requests on control.plane.listener.name=PLAINTEXT); ``Cluster(..., replication="grpc")``, or
MINIKAFKA_TEST_REPLICATION=grpc for a whole run, replicates over the gRPC listener instead.
``Cluster(..., tls=certs_dir)`` (certificates of scripts/make-certs.sh) makes both listeners
TLS: the gRPC one ``SSL`` (ssl.client.auth=required: mutual TLS between brokers, and clients
present a certificate) and the Kafka one ``KAFKA_SSL`` (ssl.client.auth=requested); broker
``<id>`` presents ``broker<id % 3 + 1>.pem``, and the cluster's own clients (``channel``,
``admin``) present ``admin.pem``.
Each broker ``<id>`` (0..n-1) lives in ``tmp_path/broker-<id>/``: ``server.properties``,
``logs/`` (its log.dirs) and ``broker.log`` (the process's stdout and stderr, JSON log lines).
``Cluster(..., grpc_listener="SASL", sasl=SaslCredentials(...))`` names the gRPC listener
(its protocol from the overrides' listener.security.protocol.map) and logs the harness's own
channels and AdminClients in as that user.
A test that lays the listeners out itself (``write_config(id, extra)`` before ``start_all``)
gives ``client_security=ClientSecurity(...)`` for how the harness's own clients connect to the
first gRPC listener (tests/integration/test_secured_cluster.py).
Timeouts are short so that failover happens within seconds: zookeeper.session.timeout.ms 6000,
replica.lag.time.max.ms 3000, controlled.shutdown.retry.backoff.ms 200; automatic preferred
leader rebalancing is off unless ``overrides`` turn it on.

Not thread-safe: drive a Cluster from the test's thread.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import grpc
from prometheus_client.parser import text_string_to_metric_families

from minikafka.broker.storage.checkpoints import (
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
)
from minikafka.client._security import ClientSecurity
from minikafka.client.admin import AdminClient
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.cluster_state import PartitionState
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import Record, decode_records, encode_batch, iter_batch_headers
from minikafka.proto.sasl_channel import SaslCredentials, sasl_channel
from minikafka.zk.zk_auth import NO_SECURITY, ZkClientSecurity
from minikafka.zk.zk_store import ZkStore
from tests.integration.zookeeper import free_port

T = TypeVar("T")
Metric = tuple[str, tuple[tuple[str, str], ...]]

REPO_ROOT = Path(__file__).resolve().parents[2]

DEFAULT_OVERRIDES: Mapping[str, str] = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    "controlled.shutdown.max.retries": "3",
    "controlled.shutdown.retry.backoff.ms": "200",
    "request.timeout.ms": "10000",
    "auto.leader.rebalance.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
}

# What each way of replicating adds to a broker's config (``Cluster(replication=...)``).
REPLICATION_CONFIGS: Mapping[str, Mapping[str, str]] = {
    "kafka": {"inter.broker.listener.name": "KAFKA", "control.plane.listener.name": "PLAINTEXT"},
    "grpc": {"inter.broker.listener.name": "PLAINTEXT"},
}
DEFAULT_REPLICATION = os.environ.get("MINIKAFKA_TEST_REPLICATION", "kafka")

# Errors after which a produce or fetch should look for the leader again.
_RETRY_ELSEWHERE = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.NETWORK_EXCEPTION,  # the harness's word for "the broker did not answer"
    }
)


# Broker processes that may still run; killed when the interpreter exits, so that pytest dying
# mid-test never leaves brokers behind.
_live_processes: set[subprocess.Popen[bytes]] = set()


@atexit.register
def _kill_leftover_brokers() -> None:
    for process in list(_live_processes):
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.kill()


class ClusterError(AssertionError):
    """The cluster did not do what the test waited for; the message holds broker log tails."""


@dataclass(frozen=True)
class ProduceResult:
    error: ErrorCode
    base_offset: int
    leader: int  # the broker that answered, -1 when none could be reached
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.error == ErrorCode.NONE


@dataclass(frozen=True)
class ReplicaState:
    """One replica's log as its files hold it (read without opening it as a Log)."""

    log_end_offset: int
    high_watermark: int | None  # from replication-offset-checkpoint; None when not written
    batches: tuple[tuple[int, int, bytes], ...]  # (base offset, next offset, batch bytes)

    def bytes_below(self, offset: int) -> bytes:
        """The batches that end at or below ``offset``, back to back."""
        return b"".join(data for _, next_offset, data in self.batches if next_offset <= offset)


class BrokerProcess:
    """One ``python -m minikafka broker`` process and its files."""

    def __init__(
        self, broker_id: int, root: Path, port: int, kafka_port: int, metrics_port: int = 0
    ) -> None:
        self.broker_id = broker_id
        self.root = root
        self.port = port
        self.kafka_port = kafka_port  # the Kafka-protocol listener (kafka.listeners)
        self.metrics_port = metrics_port  # GET /metrics (metrics.listener); 0: none
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def kafka_address(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def config_file(self) -> Path:
        return self.root / "server.properties"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def output_file(self) -> Path:
        return self.root / "broker.log"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def output_tail(self, lines: int = 60) -> str:
        if not self.output_file.exists():
            return "(no output)"
        text = self.output_file.read_text("utf-8", "replace").splitlines()
        return "\n".join(text[-lines:])

    def log_events(self, event: str | None = None) -> list[dict[str, object]]:
        """The JSON log lines of this broker (every run), optionally only one event."""
        events = []
        if self.output_file.exists():
            for line in self.output_file.read_text("utf-8", "replace").splitlines():
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if isinstance(item, dict) and (event is None or item.get("event") == event):
                    events.append(item)
        return events


class Cluster:
    """See the module docstring."""

    def __init__(
        self,
        zk_connect: str,
        tmp_path: Path,
        n_brokers: int = 3,
        overrides: Mapping[str, str] | None = None,
        *,
        first_id: int = 0,
        replication: str = DEFAULT_REPLICATION,
        env: Mapping[str, str] | None = None,
        zk_security: ZkClientSecurity = NO_SECURITY,
        grpc_listener: str = "PLAINTEXT",
        sasl: SaslCredentials | None = None,
        tls: Path | None = None,
        client_security: ClientSecurity | None = None,
        ports: Callable[[], int] = free_port,
    ) -> None:
        """``env``: variables the broker processes get besides the harness's own (which has
        every ``KAFKA_*`` taken out), e.g. ``KAFKA_OPTS`` naming a JAAS file;
        ``zk_security``: the harness's own ZooKeeper login (zk/zk_auth.py);
        ``client_security``: how the harness's own clients connect, instead of what ``tls``
        and ``sasl`` make of it (a cluster whose listeners a test lays out itself);
        ``ports``: hands out each broker's three listen ports (a benchmark's ``--port-base``)."""
        self.zk_connect = zk_connect
        self.env = dict(env or {})
        self.zk_security = zk_security
        self.grpc_listener = grpc_listener
        self.sasl = sasl
        self.tls = tls
        # How the cluster's own clients connect (the admin's certificate on a TLS cluster).
        self.client_security = (
            ClientSecurity()
            if tls is None
            else ClientSecurity(
                security_protocol="SSL",
                ssl_ca_location=str(tls / "truststore.pem"),
                ssl_certificate_location=str(tls / "admin.crt"),
                ssl_key_location=str(tls / "admin.key"),
            )
        )
        if sasl is not None:  # and the harness's SASL login, over TLS too on a TLS cluster
            self.client_security = dataclasses.replace(
                self.client_security,
                security_protocol="SASL_PLAINTEXT" if tls is None else "SASL_SSL",
                sasl_mechanism=sasl.mechanism,
                sasl_username=sasl.username,
                sasl_password=sasl.password,
            )
        if client_security is not None:
            self.client_security = client_security
        self.tmp_path = tmp_path
        self.replication = replication
        self.overrides = {
            **DEFAULT_OVERRIDES,
            **REPLICATION_CONFIGS[replication],
            **(overrides or {}),
        }
        self.brokers: dict[int, BrokerProcess] = {}
        for broker_id in range(first_id, first_id + n_brokers):
            root = tmp_path / f"broker-{broker_id}"
            root.mkdir(parents=True, exist_ok=True)
            self.brokers[broker_id] = BrokerProcess(broker_id, root, ports(), ports(), ports())
        self._zk: ZkStore | None = None
        self._admins: list[AdminClient] = []
        self._channels: dict[str, grpc.Channel] = {}

    # --- processes --------------------------------------------------------------------------

    def write_config(self, broker_id: int, extra: Mapping[str, str] | None = None) -> Path:
        broker = self.brokers[broker_id]
        props = {
            "broker.id": str(broker_id),
            "listeners": f"{self.grpc_listener}://127.0.0.1:{broker.port}",
            "kafka.listeners": f"KAFKA://127.0.0.1:{broker.kafka_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,KAFKA:PLAINTEXT",
            "metrics.listener": f"http://127.0.0.1:{broker.metrics_port}",
            "log.dirs": str(broker.log_dir),
            "zookeeper.connect": self.zk_connect,
            "num.partitions": "1",
            "default.replication.factor": str(min(3, len(self.brokers))),
            "offsets.topic.replication.factor": str(min(3, len(self.brokers))),
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": str(min(3, len(self.brokers))),
            "transaction.state.log.num.partitions": "3",
            **self.overrides,
            **(extra or {}),
        }
        if self.tls is not None:  # what ``extra`` sets wins (a test's bad key store)
            tls = self._tls_props(broker_id, props)
            props.update({k: v for k, v in tls.items() if k not in (extra or {})})
        broker.config_file.write_text(
            "".join(f"{key}={value}\n" for key, value in props.items()), encoding="utf-8"
        )
        return broker.config_file

    def _tls_props(self, broker_id: int, props: Mapping[str, str]) -> dict[str, str]:
        """The listeners renamed SSL and KAFKA_SSL, TLS both, and the key and trust stores."""
        assert self.tls is not None
        broker = self.brokers[broker_id]
        renamed = {"PLAINTEXT": "SSL", "KAFKA": "KAFKA_SSL"}
        tls = {
            "listeners": f"SSL://127.0.0.1:{broker.port}",
            "kafka.listeners": f"KAFKA_SSL://127.0.0.1:{broker.kafka_port}",
            "listener.security.protocol.map": "SSL:SSL,KAFKA_SSL:SSL",
            "ssl.keystore.location": str(self.tls / f"broker{broker_id % 3 + 1}.pem"),
            "ssl.truststore.location": str(self.tls / "truststore.pem"),
            "ssl.client.auth": "required",
            "listener.name.kafka_ssl.ssl.client.auth": "requested",
        }
        for key in ("inter.broker.listener.name", "control.plane.listener.name"):
            if key in props:
                tls[key] = renamed.get(props[key], props[key])
        return tls

    def start(
        self,
        broker_id: int,
        *,
        extra: Mapping[str, str] | None = None,
        wait_for_expiry: bool = True,
    ) -> BrokerProcess:
        """Start (or restart) a broker with its config, log dirs and port; does not wait.

        After a SIGKILL, /brokers/ids/<id> stays held until the dead process's session
        expires. By default this waits for that here, so that the broker registers as soon as
        it starts; ``wait_for_expiry=False`` starts it at once (the broker waits by itself).
        """
        broker = self.brokers[broker_id]
        if broker.running:
            raise ClusterError(f"broker {broker_id} is already running")
        if extra is not None or not broker.config_file.exists():
            self.write_config(broker_id, extra)
        if wait_for_expiry:
            self.wait_for(
                lambda: self.zk.get_broker_epoch(broker_id) is None,
                int(self.overrides["zookeeper.session.timeout.ms"]) / 1000 + 10,
                f"the old registration of broker {broker_id} to expire",
            )
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}
        env.update(KAFKA_LOG_FORMAT="json", PYTHONUNBUFFERED="1")
        env.update(self.env)
        with broker.output_file.open("ab") as out:
            broker.process = subprocess.Popen(
                [sys.executable, "-m", "minikafka", "broker", "--config", str(broker.config_file)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO_ROOT,
                env=env,
                start_new_session=True,  # a Ctrl-C aimed at pytest does not reach the brokers
            )
        _live_processes.add(broker.process)
        return broker

    def start_all(self) -> None:
        for broker_id in self.brokers:
            self.start(broker_id)

    def kill(self, broker_id: int) -> None:
        """SIGKILL, and wait for the process to be gone."""
        broker = self.brokers[broker_id]
        if broker.process is not None and broker.running:
            broker.process.send_signal(signal.SIGCONT)  # a paused process dies all the same
            broker.process.kill()
            broker.process.wait(10)
        if broker.process is not None:
            _live_processes.discard(broker.process)

    def stop(self, broker_id: int, timeout_s: float = 30.0) -> int:
        """SIGTERM (a controlled shutdown) and wait; the exit status."""
        broker = self.brokers[broker_id]
        if broker.process is None:
            raise ClusterError(f"broker {broker_id} was never started")
        if broker.running:
            broker.process.send_signal(signal.SIGTERM)
        try:
            return broker.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill(broker_id)
            raise ClusterError(
                f"broker {broker_id} did not stop within {timeout_s} s of SIGTERM\n"
                + self.describe()
            ) from None

    def pause(self, broker_id: int) -> None:
        self._signal(broker_id, signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        self._signal(broker_id, signal.SIGCONT)

    def _signal(self, broker_id: int, signum: int) -> None:
        broker = self.brokers[broker_id]
        if not broker.running or broker.process is None:
            raise ClusterError(f"broker {broker_id} is not running")
        broker.process.send_signal(signum)

    def running_ids(self) -> list[int]:
        return [b.broker_id for b in self.brokers.values() if b.running]

    def close(self) -> None:
        """Kill every broker still running and close the harness's clients."""
        for broker_id in self.brokers:
            self.kill(broker_id)
        for admin in self._admins:
            admin.close()
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
        if self._zk is not None:
            self._zk.close()
            self._zk = None

    def describe(self, lines: int = 40) -> str:
        """The tail of every broker's output, for failure messages."""
        parts = []
        for broker in self.brokers.values():
            status = "running" if broker.running else f"exit {self._exit_code(broker)}"
            parts.append(
                f"--- broker {broker.broker_id} ({status}) {broker.output_file} ---\n"
                + broker.output_tail(lines)
            )
        return "\n".join(parts)

    @staticmethod
    def _exit_code(broker: BrokerProcess) -> int | None:
        return None if broker.process is None else broker.process.poll()

    # --- waiting ----------------------------------------------------------------------------

    def wait_for(
        self,
        predicate: Callable[[], T | None],
        timeout_s: float = 20.0,
        what: str = "condition",
        interval_s: float = 0.1,
    ) -> T:
        """Poll until ``predicate()`` returns neither None nor False, and return that value
        (0 is a value: a broker id); ClusterError after the timeout.

        Exceptions from the predicate count as "not yet" (brokers may be restarting).
        """
        deadline = time.monotonic() + timeout_s
        last_error: BaseException | None = None
        while True:
            try:
                value = predicate()
                if value is not None and value is not False:
                    return value
            except Exception as exc:  # not there yet; keep the reason
                last_error = exc
            if time.monotonic() >= deadline:
                reason = f" (last error: {last_error!r})" if last_error else ""
                raise ClusterError(
                    f"timed out after {timeout_s} s waiting for {what}{reason}\n" + self.describe()
                )
            time.sleep(interval_s)

    def wait_until_serving(
        self, broker_ids: Iterable[int] | None = None, timeout_s: float = 30.0
    ) -> None:
        """Until each broker is registered, a controller is elected, and every broker's
        metadata lists all the running brokers (the controller has sent UpdateMetadata)."""
        ids = sorted(self.running_ids() if broker_ids is None else broker_ids)

        def ready() -> bool:
            for broker_id in ids:
                broker = self.brokers[broker_id]
                if not broker.running:
                    raise ClusterError(f"broker {broker_id} exited with {self._exit_code(broker)}")
            if not set(ids) <= set(self.zk.get_live_broker_ids()):
                return False
            if self.controller_id() is None:
                return False
            for broker_id in ids:
                response = self.metadata(broker_id, topics=())
                if not set(ids) <= {b.node_id for b in response.brokers}:
                    return False
            return True

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if ready():
                    return
            except ClusterError as exc:
                raise ClusterError(f"{exc}\n{self.describe()}") from None
            except Exception:  # gRPC not up yet
                pass
            if time.monotonic() >= deadline:
                raise ClusterError(
                    f"brokers {ids} not serving after {timeout_s} s\n" + self.describe()
                )
            time.sleep(0.1)

    # --- ZooKeeper views --------------------------------------------------------------------

    @property
    def zk(self) -> ZkStore:
        if self._zk is None:
            self._zk = ZkStore.connect(
                self.zk_connect, session_timeout_ms=10_000, security=self.zk_security
            )
        return self._zk

    def controller_id(self) -> int | None:
        controller = self.zk.get_controller()
        return None if controller is None else controller.broker_id

    def controller_epoch(self) -> int | None:
        epoch = self.zk.get_controller_epoch()
        return None if epoch is None else epoch.value

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        state = self.zk.get_partition_state(topic, partition)
        return None if state is None else state.value

    def partition_state_json(self, topic: str, partition: int) -> dict[str, object]:
        data, _ = self.zk.client.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        value: dict[str, object] = json.loads(data)
        return value

    def isr(self, topic: str, partition: int) -> tuple[int, ...]:
        state = self.partition_state(topic, partition)
        return () if state is None else state.isr

    def leader(self, topic: str, partition: int) -> int:
        state = self.partition_state(topic, partition)
        return -1 if state is None else state.leader

    def metrics(self, broker_id: int, timeout_s: float = 5.0) -> dict[Metric, float]:
        """One scrape of the broker's GET /metrics: {(sample name, sorted labels): value}."""
        url = f"http://127.0.0.1:{self.brokers[broker_id].metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            text = response.read().decode("utf-8")
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def metric(self, broker_id: int, name: str, **labels: str) -> float | None:
        """One sample of one scrape; None when the broker does not report it."""
        return self.metrics(broker_id).get((name, tuple(sorted(labels.items()))))

    # --- clients ----------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.brokers[i].address for i in sorted(self.brokers))

    @property
    def kafka_bootstrap_servers(self) -> str:
        """The brokers' Kafka-protocol listeners, for kafka-python and confluent-kafka."""
        return ",".join(self.brokers[i].kafka_address for i in sorted(self.brokers))

    def admin(self, request_timeout_ms: int = 20_000) -> AdminClient:
        admin = AdminClient(
            self.bootstrap_servers,
            request_timeout_ms=request_timeout_ms,
            security=self.client_security,
        )
        self._admins.append(admin)
        return admin

    @property
    def security(self) -> dict[str, str] | None:
        """The client keys of the harness's login (None without SASL)."""
        if self.sasl is None:
            return None
        return {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": self.sasl.mechanism,
            "sasl.username": self.sasl.username,
            "sasl.password": self.sasl.password,
        }

    def channel(self, broker_id: int) -> grpc.Channel:
        address = self.brokers[broker_id].address
        channel = self._channels.get(address)
        if channel is None:
            options = [
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 500),
            ]
            credentials = self.client_security.channel_credentials()
            channel = (
                grpc.insecure_channel(address, options=options)
                if credentials is None
                else grpc.secure_channel(address, credentials, options=options)
            )
            if self.sasl is not None:
                channel = sasl_channel(channel, self.sasl, address)
            self._channels[address] = channel
        return channel

    def metadata(
        self, broker_id: int, topics: Sequence[str] | None = None, timeout_s: float = 5.0
    ) -> pb.MetadataResponse:
        """Metadata from one broker; ``topics=()`` asks for a topic list anyway (all)."""
        request = pb.MetadataRequest(
            topics=[pb.MetadataRequest.MetadataRequestTopic(name=t) for t in topics or ()]
        )
        stub = pb_grpc.MetadataStub(self.channel(broker_id))
        return stub.Metadata(request, timeout=timeout_s)

    def produce(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes],
        *,
        acks: int = -1,
        timeout_ms: int = 5_000,
        to: int | None = None,
        retry_s: float = 0.0,
    ) -> ProduceResult:
        """Send ``values`` as one batch to the partition leader (from ZooKeeper) or to ``to``.

        With ``retry_s`` > 0, "not the leader", "no leader" and unreachable brokers are
        retried for that long (a new batch each time, as nothing was appended); any other
        answer, including NOT_ENOUGH_REPLICAS and REQUEST_TIMED_OUT, is returned at once.
        """
        batch = encode_batch([(int(time.time() * 1000), None, v, ()) for v in values])
        request = pb.ProduceRequest(
            acks=acks,
            timeout_ms=timeout_ms,
            topic_data=[
                pb.ProduceRequest.TopicProduceData(
                    name=topic,
                    partition_data=[
                        pb.ProduceRequest.PartitionProduceData(index=partition, records=batch)
                    ],
                )
            ],
        )
        deadline = time.monotonic() + retry_s
        while True:
            target = to if to is not None else self.leader(topic, partition)
            result = self._produce_once(target, request, timeout_ms)
            retriable = (
                result.error in _RETRY_ELSEWHERE or result.error == ErrorCode.NETWORK_EXCEPTION
            )
            if not retriable or time.monotonic() >= deadline:
                return result
            time.sleep(0.1)

    def _produce_once(
        self, broker_id: int, request: pb.ProduceRequest, timeout_ms: int
    ) -> ProduceResult:
        if broker_id < 0 or broker_id not in self.brokers:
            return ProduceResult(ErrorCode.LEADER_NOT_AVAILABLE, -1, -1, "no leader")
        stub = pb_grpc.DataStub(self.channel(broker_id))
        try:
            response = stub.Produce(request, timeout=timeout_ms / 1000 + 5)
        except grpc.RpcError as exc:
            return ProduceResult(
                ErrorCode.NETWORK_EXCEPTION, -1, broker_id, f"{exc.code().name}: {exc.details()}"
            )
        answer = response.responses[0].partition_responses[0]
        return ProduceResult(
            ErrorCode(answer.error_code), answer.base_offset, broker_id, answer.error_message
        )

    def fetch(
        self,
        broker_id: int,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_wait_ms: int = 0,
        timeout_s: float = 10.0,
    ) -> pb.FetchResponse.PartitionData:
        request = pb.FetchRequest(
            replica_id=-1,
            replica_epoch=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=16 * 1024 * 1024,
            topics=[
                pb.FetchRequest.FetchTopic(
                    topic=topic,
                    partitions=[
                        pb.FetchRequest.FetchPartition(
                            partition=partition,
                            current_leader_epoch=-1,
                            fetch_offset=offset,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=8 * 1024 * 1024,
                        )
                    ],
                )
            ],
        )
        response = pb_grpc.DataStub(self.channel(broker_id)).Fetch(request, timeout=timeout_s)
        return response.responses[0].partitions[0]

    def fetch_all(self, topic: str, partition: int, timeout_s: float = 20.0) -> list[Record]:
        """Every record below the high watermark, read from the current leader."""

        def attempt() -> list[Record] | None:
            leader = self.leader(topic, partition)
            if leader < 0:
                return None
            records: list[Record] = []
            while True:
                offset = records[-1].offset + 1 if records else 0
                data = self.fetch(leader, topic, partition, offset)
                if data.error_code != ErrorCode.NONE:
                    raise ClusterError(
                        f"fetch {topic}-{partition}@{offset} from {leader}: "
                        f"{ErrorCode(data.error_code).name} {data.error_message}"
                    )
                batch = [r for r in decode_records(data.records) if r.offset >= offset]
                if not batch:
                    if offset < data.high_watermark:
                        raise ClusterError(f"no records at {offset} below {data.high_watermark}")
                    return records
                records.extend(batch)

        result: list[list[Record]] = []

        def done() -> bool:
            records = attempt()
            if records is not None:
                result.append(records)
            return records is not None

        self.wait_for(done, timeout_s, f"fetch_all({topic}-{partition})")
        return result[-1]

    # --- disk -------------------------------------------------------------------------------

    def replica_state(self, broker_id: int, topic: str, partition: int) -> ReplicaState:
        """The replica's batches, LEO and checkpointed HW, read straight from its files.

        Meant for stopped brokers (a running one may be mid-write: a trailing partial batch
        is ignored, and its HW checkpoint may lag).
        """
        broker = self.brokers[broker_id]
        directory = broker.log_dir / f"{topic}-{partition}"
        batches: list[tuple[int, int, bytes]] = []
        for segment in sorted(directory.glob("*.log"), key=lambda p: int(p.stem)):
            data = segment.read_bytes()
            for pos, header in iter_batch_headers(data):
                batches.append(
                    (header.base_offset, header.next_offset, data[pos : pos + header.size])
                )
        checkpoint = OffsetCheckpointFile(broker.log_dir / REPLICATION_OFFSET_CHECKPOINT).read()
        hw = checkpoint.get(TopicPartition(topic, partition))
        leo = batches[-1][1] if batches else 0
        return ReplicaState(leo, hw, tuple(batches))
