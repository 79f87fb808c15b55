"""One replay run: the scenario played on three brokers, the outcome measured.

    run = run_scenario(SCENARIOS["lost-ack"], variant, workdir=Path("/tmp/r"),
                       zk_connect="127.0.0.1:2181/minikafka-replay-1f3a", narrator=narrator)
    run = run_on_cluster(SCENARIOS["isr"], variant, ComposeBrokers.discover(...),
                         topic="replay-isr-1f3a", narrator=narrator)

``run_scenario``: processes of this machine (local_brokers.py) on a ZooKeeper chroot of their
own; the broker the scenario names starts first, so it wins /controller, then the others, then
the partition is created with the scenario's assignment. Whatever happens, every broker is
killed at the end. ``run_on_cluster``: a cluster that runs already (compose_brokers.py); the
scenario's broker ids are cast onto it (its controller where the scenario wants one), and at
the end the brokers are put back as they were and the topic is deleted.

Not thread-safe: call from one thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from minikafka.client.cli.replay.control import BrokerControl
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

__all__ = ["TOPIC", "cast_for", "run_on_cluster", "run_scenario"]

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

    def __init__(self, brokers: BrokerControl, topic: str) -> None:
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


def cast_for(first: int, controller: int, broker_ids: Sequence[int]) -> tuple[int, ...]:
    """Broker ids for a scenario's 1, 2, 3 on a cluster whose controller is ``controller``:
    the scenario's ``first`` (its controller) is that broker, the others keep their order.

    >>> cast_for(3, 1, [1, 2, 3])
    (2, 3, 1)
    """
    ids = sorted(broker_ids)
    if controller not in ids:
        return tuple(ids)
    rest = [b for b in ids if b != controller]
    return tuple(controller if n == first else rest.pop(0) for n in range(1, len(ids) + 1))


def _settings(admin: AdminClient, broker_id: int) -> dict[str, str]:
    """The broker's configs in force: the timers the scenarios wait for."""
    configs = admin.describe_broker_configs(broker_id, timeout_ms=5000)
    return {name: entry.value for name, entry in configs.items() if entry.value is not None}


def _stage(
    scenario: Scenario,
    brokers: BrokerControl,
    topic: str,
    cast: tuple[int, ...],
    narrator: Narrator,
    beat_s: float,
    interactive: bool,
) -> Stage:
    return Stage(
        brokers,
        _WatchObserver(brokers, topic),
        Wire(),
        narrator,
        topic,
        0,
        tuple(sorted(cast[n - 1] for n in scenario.assignment)),
        beat_s=beat_s,
        interactive=interactive,
        cast=cast,
    )


def _play(scenario: Scenario, variant: Variant, stage: Stage, admin: AdminClient) -> Run:
    """Create the scenario's partition, play it, and gather what was measured."""
    from minikafka.client.admin import NewTopic, raise_first

    assignment = [stage.cast[n - 1] for n in scenario.assignment]
    created = admin.create_topics(
        [
            NewTopic(
                stage.topic,
                replica_assignment={0: assignment},
                configs={**scenario.topic_configs, **variant.topic_configs},
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
        topic=stage.topic,
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
    """On three brokers of its own, started here (the scenario's first one wins /controller)
    and killed at the end."""
    from minikafka.client.admin import AdminClient

    brokers = LocalBrokers(
        workdir, zk_connect, (1, 2, 3), {**scenario.overrides, **variant.overrides}
    )
    admin = AdminClient(brokers.bootstrap_servers, request_timeout_ms=_REQUEST_TIMEOUT_MS)
    stage = _stage(scenario, brokers, TOPIC, (1, 2, 3), narrator, beat_s, interactive)
    try:
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
        stage.settings = _settings(admin, first)
        return _play(scenario, variant, stage, admin)
    finally:
        brokers.close()
        admin.close()
        stage.wire.close()


def run_on_cluster(
    scenario: Scenario,
    variant: Variant,
    brokers: BrokerControl,
    *,
    topic: str,
    narrator: Narrator,
    beat_s: float = 1.0,
    interactive: bool = False,
    restore_timeout_s: float = 90.0,
) -> Run:
    """On a running cluster of three brokers (``brokers``: its containers): the scenario's
    brokers are cast so that its controller is the cluster's (cast_for), its topic
    (``topic``, a new name) is deleted at the end, and whatever the run paused, killed or
    stopped is resumed or started again, also when it fails or is interrupted."""
    from minikafka.client.admin import AdminClient

    if len(brokers.broker_ids) != 3:
        raise ReplayError(f"the scenarios need 3 brokers, the cluster has {brokers.broker_ids}")
    admin = AdminClient(brokers.bootstrap_servers, request_timeout_ms=_REQUEST_TIMEOUT_MS)
    stage: Stage | None = None
    try:
        controller = admin.describe_cluster().controller_id
        cast = cast_for(scenario.first, controller, brokers.broker_ids)
        stage = _stage(scenario, brokers, topic, cast, narrator, beat_s, interactive)
        stage.process.update({b: "up" for b in brokers.broker_ids})
        stage.settings = _settings(admin, controller if controller > 0 else cast[0])
        return _play(scenario, variant, stage, admin)
    finally:
        try:
            brokers.close()  # first of all: the containers as they were
        finally:
            try:
                _wait(
                    lambda: len(admin.describe_cluster().brokers) == len(brokers.broker_ids),
                    "every broker to register again",
                    restore_timeout_s,
                )
                _delete_topic(admin, topic)
            finally:
                admin.close()
                if stage is not None:
                    stage.wire.close()


def _delete_topic(admin: AdminClient, topic: str) -> None:
    from minikafka.proto.errors import UnknownTopicOrPartitionError

    error = admin.delete_topics([topic], timeout_ms=10_000).get(topic)
    if error is not None and not isinstance(error, UnknownTopicOrPartitionError):
        raise ReplayError(f"could not delete the scenario's topic {topic}: {error}")
