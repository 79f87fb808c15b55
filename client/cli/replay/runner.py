"""One replay run: a fresh 3-broker cluster, the scenario played on it, the outcome measured.

    run = run_scenario(SCENARIOS["lost-ack"], variant, workdir=Path("/tmp/r"),
                       zk_connect="127.0.0.1:2181/minikafka-replay-1f3a", narrator=narrator)

The brokers are processes of this machine (local_brokers.py) on a ZooKeeper chroot of their
own; the broker the scenario names starts first, so it wins /controller, then the others, then
the partition is created with the scenario's assignment. Whatever happens, every broker is
killed at the end.

Not thread-safe: call from one thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from minikafka.client.cli.replay.local_brokers import LocalBrokers
from minikafka.client.cli.replay.scenarios import Scenario, Variant
from minikafka.client.cli.replay.stage import Narrator, ReplayError, Stage
from minikafka.client.cli.replay.timeline import Run
from minikafka.client.cli.replay.wire import Wire
from minikafka.client.cli.watch.model import Snapshot
from minikafka.proto.errors import KafkaError, RequestTimedOutError

if TYPE_CHECKING:  # client.admin loads grpc: only when a replay runs
    from minikafka.client.admin import (
        AdminClient,
        BrokerReplicas,
        ClusterDescription,
        ConsumerGroupListing,
        TopicDescription,
    )
    from minikafka.client.cli.watch.collect import ClusterWatcher
    from minikafka.proto.common import OffsetAndMetadata, TopicPartition

T = TypeVar("T")

__all__ = ["TOPIC", "run_scenario"]

TOPIC = "replay"
_REQUEST_TIMEOUT_MS = 1500  # a paused broker must not hold a sample for long
_REPLICAS_TIMEOUT_MS = 700


class _AnsweringAdmin:
    """What ClusterWatcher asks (its WatchAdmin), put to the running brokers only, through an
    AdminClient made for each call: an AdminClient asks the brokers it knows first, and a
    paused one, still registered, would take every call's whole timeout."""

    def __init__(self, addresses: Sequence[str]) -> None:
        self._addresses = list(addresses)

    def _ask(self, call: Callable[[AdminClient], T]) -> T:
        from minikafka.client.admin import AdminClient

        last: KafkaError | None = None
        for address in self._addresses:
            with AdminClient(address, request_timeout_ms=_REQUEST_TIMEOUT_MS) as admin:
                try:
                    return call(admin)
                except KafkaError as exc:
                    last = exc
        raise last if last is not None else RequestTimedOutError("no broker runs")

    def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        return self._ask(lambda a: a.describe_cluster(timeout_ms=timeout_ms))

    def describe_topics(
        self, topics: Sequence[str] | None = None, *, timeout_ms: int | None = None
    ) -> dict[str, TopicDescription]:
        return self._ask(lambda a: a.describe_topics(topics, timeout_ms=timeout_ms))

    def describe_replicas(
        self,
        broker_ids: Iterable[int] | None = None,
        *,
        topics: Sequence[str] = (),
        timeout_ms: int | None = None,
    ) -> dict[int, BrokerReplicas | KafkaError]:
        ids = None if broker_ids is None else list(broker_ids)
        return self._ask(lambda a: a.describe_replicas(ids, topics=topics, timeout_ms=timeout_ms))

    def list_groups(
        self, *, states: Sequence[str] = (), timeout_ms: int | None = None
    ) -> list[ConsumerGroupListing]:
        return []  # the watcher is made with groups=False

    def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        return {}


class _WatchObserver:
    """The ``minikafka watch`` model (ClusterWatcher) of the running brokers; made again when
    the set of running brokers changes."""

    def __init__(self, brokers: LocalBrokers, topic: str) -> None:
        self._brokers = brokers
        self._topic = topic
        self._answering: tuple[int, ...] = ()
        self._watcher: ClusterWatcher | None = None

    def snapshot(self, answering: Sequence[int]) -> Snapshot:
        from minikafka.client.cli.watch.collect import ClusterWatcher

        if not answering:
            return Snapshot(time.time(), error="no broker runs")
        if self._watcher is None or tuple(answering) != self._answering:
            self._answering = tuple(answering)
            self._watcher = ClusterWatcher(
                _AnsweringAdmin([self._brokers.address(b) for b in answering]),
                topics=[self._topic],
                groups=False,
                replicas_timeout_ms=_REPLICAS_TIMEOUT_MS,
            )
        return self._watcher.snapshot()


def _wait(predicate: object, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if predicate():  # type: ignore[operator]
                return
        except KafkaError as exc:
            last = exc
        time.sleep(0.1)
    raise ReplayError(f"timed out waiting for {what}" + (f" ({last})" if last else ""))


def run_scenario(
    scenario: Scenario,
    variant: Variant,
    *,
    workdir: Path,
    zk_connect: str,
    narrator: Narrator,
    beat_s: float = 1.0,
    interactive: bool = False,
) -> Run:
    from minikafka.client.admin import AdminClient, NewTopic, raise_first

    brokers = LocalBrokers(
        workdir, zk_connect, (1, 2, 3), {**scenario.overrides, **variant.overrides}
    )
    wire = Wire()
    admin = AdminClient(brokers.bootstrap_servers, request_timeout_ms=_REQUEST_TIMEOUT_MS)
    observer = _WatchObserver(brokers, TOPIC)
    try:
        stage = Stage(
            brokers,
            observer,
            wire,
            narrator,
            TOPIC,
            0,
            tuple(sorted(scenario.assignment)),
            beat_s=beat_s,
            interactive=interactive,
        )
        first = scenario.first
        stage.start(first)
        _wait(
            lambda: admin.describe_cluster().controller_id == first,
            f"broker {first} to become the controller",
        )
        for broker_id in brokers.broker_ids:
            if broker_id != first:
                stage.start(broker_id)
        _wait(lambda: len(admin.describe_cluster().brokers) == 3, "three brokers to register")
        created = admin.create_topics(
            [
                NewTopic(
                    TOPIC,
                    replica_assignment={0: scenario.assignment},
                    configs=dict(scenario.topic_configs),
                )
            ],
            timeout_ms=10_000,
        )
        raise_first(created)
        scenario.play(stage, variant)
        return Run(
            scenario=scenario.name,
            variant=variant.name,
            title=scenario.title,
            promise=scenario.promise,
            expect_violation=variant.expect_violation,
            topic=TOPIC,
            partition=0,
            replicas=stage.replicas,
            steps=tuple(stage.steps),
            samples=tuple(stage.samples),
            marks=tuple(stage.marks),
            records=tuple(stage.fates),
            checks=tuple(stage.checks),
            replica_logs=stage.logs,
            duration_s=stage.t(),
        )
    finally:
        brokers.close()
        admin.close()
        wire.close()
