"""The controller's topic requests on plain values: CreateTopics, DeleteTopics, CreatePartitions,
ElectLeaders (one part of TopicAdmin, broker/server/core/admin.py).

They go to ``controller`` (this broker's KafkaController), which answers NOT_CONTROLLER per item
when another broker is controller (clients find it through Metadata's controller id). Requests
are checked here first, as Kafka's request handler does: a topic named twice in one request is
INVALID_REQUEST, topic configs must be known keys with valid values (INVALID_CONFIG, see
core/configs.py). An internal topic (``__consumer_offsets``) is the broker's own: a client may
neither create nor delete it (INVALID_REQUEST, with the messages of Kafka's "Creation of internal
topic ... is prohibited" and of its topic tool's refusal to delete one). Kafka in ZooKeeper mode
leaves this to ACLs, which this broker does not have; a ``__consumer_offsets`` of a client's
making (1 partition, RF 1, not compacted) would take the place of the one the broker creates on
first use (core/topic_creation.py).

``create_topics`` with ``timeout_ms`` > 0 answers once this broker's metadata has a leader for
every partition created, at most ``timeout_ms`` (Kafka's DelayedCreatePartitions): the
controller elects them before it answers, but this broker learns of them from its
UpdateMetadata a moment later, and a client's next request here (Metadata, DeleteTopics by topic
id) must know the topic, under the id it was created with. Past the timeout a topic whose
leaders are not all known is answered REQUEST_TIMED_OUT, as Kafka does: it was created all the
same. ``create_partitions`` waits the same way for the leaders of the new partitions (a
client that lists their offsets next must find them here). ``delete_topics`` with
``timeout_ms`` > 0 waits until the topic is gone from ZooKeeper, else REQUEST_TIMED_OUT.

With an authorizer (core/authorization.py), a topic created needs Create on the cluster or on
the topic, one deleted Delete on it, one grown Alter on it (else TOPIC_AUTHORIZATION_FAILED
for that topic, checked before anything else is looked up, and the controller never hears of
it); CreateTopics shows a topic's configs only with DescribeConfigs on it; ElectLeaders needs
Alter on the cluster (CLUSTER_AUTHORIZATION_FAILED).

Answers come one per distinct name, in first-seen order. Runs on the broker's event loop;
ZooKeeper calls go through ``asyncio.to_thread`` and the controller's futures are awaited with
``asyncio.wrap_future``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import structlog

from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core._admin_base import NO_SESSION, AdminBase, duplicate_names
from minikafka.broker.server.core.configs import (
    ConfigEntry,
    topic_config_entries,
    validate_topic_configs,
)
from minikafka.controller.controller import ElectionType, NewPartitions, NewTopic
from minikafka.controller.topics import validate_topic_name
from minikafka.proto.common import INTERNAL_TOPICS, TopicPartition
from minikafka.proto.errors import ErrorCode, KafkaError

__all__ = [
    "CreatableTopicResult",
    "CreatePartitionsTopic",
    "DeletableTopicResult",
    "ElectLeadersResult",
    "PartitionResult",
    "TopicResult",
    "TopicsAdmin",
]

log = structlog.get_logger(__name__)

_DENIED = "Authorization failed."


@dataclass(frozen=True, slots=True)
class TopicResult:
    """A topic's answer that is only an error (CreatePartitions)."""

    name: str
    error_code: ErrorCode
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class CreatableTopicResult:
    """A topic's CreateTopics answer: on success (also ``validate_only``) its id (empty when
    only validated), partition count, replication factor and effective configs; -1 and no
    configs on error."""

    name: str
    error_code: ErrorCode
    error_message: str = ""
    topic_id: str = ""
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Sequence[ConfigEntry] = ()
    # False: the principal may not DescribeConfigs the topic, so ``configs`` are left out
    # (Kafka's topic_config_error_code TOPIC_AUTHORIZATION_FAILED)
    configs_authorized: bool = True


@dataclass(frozen=True, slots=True)
class DeletableTopicResult:
    """A topic's DeleteTopics answer; ``topic_id`` is the deleted topic's, "" if none was read."""

    name: str
    error_code: ErrorCode
    error_message: str = ""
    topic_id: str = ""


@dataclass(frozen=True, slots=True)
class CreatePartitionsTopic:
    """CreatePartitions for one topic: the new total count and, optionally, the replicas of
    each new partition in partition order."""

    name: str
    count: int
    assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True, slots=True)
class PartitionResult:
    topic: str
    partition: int
    error_code: ErrorCode
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class ElectLeadersResult:
    """A whole-request error (NOT_CONTROLLER, INVALID_REQUEST) with no partitions, or one result
    per partition, sorted by topic and partition (ELECTION_NOT_NEEDED when the preferred
    replica already leads)."""

    error_code: ErrorCode = ErrorCode.NONE
    partitions: Sequence[PartitionResult] = ()


class TopicsAdmin(AdminBase):
    """See the module docstring. Lives on the broker's event loop."""

    async def create_topics(
        self,
        topics: Sequence[NewTopic],
        *,
        validate_only: bool = False,
        timeout_ms: int = 0,
        session: Session = NO_SESSION,
    ) -> list[CreatableTopicResult]:
        """See the module docstring: with ``timeout_ms`` > 0 the answer waits, at most that
        long, until this broker's metadata has a leader for every partition created; the
        time counts from the request's arrival, the controller's work included."""
        deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
        duplicates = duplicate_names(t.name for t in topics)
        auth = self._auth
        names = [t.name for t in topics]
        creatable = (
            set(names)
            if auth.allows(session, "CreateTopics", ResourceType.CLUSTER, log_if_denied=False)
            else auth.allowed_names(session, "CreateTopics", ResourceType.TOPIC, names)
        )
        results: dict[str, CreatableTopicResult] = {}
        to_create: list[NewTopic] = []
        for topic in topics:
            if topic.name in duplicates:
                results[topic.name] = _create_error(
                    topic.name,
                    ErrorCode.INVALID_REQUEST,
                    "Create topics request contains multiple entries for the topic.",
                )
                continue
            if topic.name not in creatable:
                results[topic.name] = _create_error(
                    topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, _DENIED
                )
                continue
            if topic.name in INTERNAL_TOPICS:
                results[topic.name] = _create_error(
                    topic.name,
                    ErrorCode.INVALID_REQUEST,
                    f"Creation of internal topic {topic.name} is prohibited.",
                )
                log.warning("create_topic_refused", topic=topic.name, reason="internal topic")
                continue
            try:
                validate_topic_configs(topic.configs)
            except KafkaError as exc:
                results[topic.name] = _create_error(topic.name, exc.code, exc.message)
                continue
            to_create.append(topic)
        if to_create:
            created = await asyncio.wrap_future(
                self._controller.create_topics(to_create, validate_only=validate_only)
            )
            shown = auth.allowed_names(
                session,
                "CreateTopics (configs)",
                ResourceType.TOPIC,
                (t.name for t in to_create),
                log_if_denied=False,
            )
            for new_topic in to_create:
                outcome = created[new_topic.name]
                if outcome.error != ErrorCode.NONE:
                    results[new_topic.name] = _create_error(
                        new_topic.name, outcome.error, outcome.message
                    )
                    continue
                results[new_topic.name] = CreatableTopicResult(
                    new_topic.name,
                    ErrorCode.NONE,
                    topic_id=outcome.topic_id,
                    num_partitions=outcome.num_partitions,
                    replication_factor=outcome.replication_factor,
                    configs=(
                        topic_config_entries(self._config, new_topic.configs, ())
                        if new_topic.name in shown
                        else ()
                    ),
                    configs_authorized=new_topic.name in shown,
                )
                log.info(
                    "create_topic_request",
                    topic=new_topic.name,
                    validate_only=validate_only,
                    partitions=outcome.num_partitions,
                    replication_factor=outcome.replication_factor,
                )
        if not validate_only and timeout_ms > 0:
            created_ok = {
                r.name: (r.num_partitions, r.topic_id)
                for r in results.values()
                if r.error_code == ErrorCode.NONE
            }
            late = await self._await_leaders(created_ok, deadline)
            for name in late:
                # Kafka's DelayedCreatePartitions on expiry: the topic exists, but the answer
                # says the wait for its leaders timed out (AdminClient: TimeoutException).
                results[name] = _create_error(
                    name,
                    ErrorCode.REQUEST_TIMED_OUT,
                    f"Topic '{name}' was created, but not every partition had a leader in "
                    f"broker {self._config.broker_id}'s metadata within {timeout_ms} ms.",
                )
        return [results[t.name] for t in _unique(topics)]

    async def _await_leaders(
        self, topics: Mapping[str, tuple[int, str]], deadline: float
    ) -> set[str]:
        """Until this broker's metadata has a leader for every partition of ``topics`` (name
        -> partition count, topic id or "" for any), at most until ``deadline`` (the loop's
        clock): woken by each UpdateMetadata it applies. Returns the names of the topics still
        missing a leader then. A partition counts only under the created topic's id, so the
        entries of a deleted topic of the same name, not yet removed here, do not satisfy the
        wait."""
        cache = self._metadata_cache
        if cache is None or not topics:
            return set()

        def missing() -> set[str]:
            late = set()
            for name, (num_partitions, topic_id) in topics.items():
                for partition in range(num_partitions):
                    info = cache.get_partition(name, partition)
                    if info is None or info.leader < 0 or (topic_id and info.topic_id != topic_id):
                        late.add(name)
                        break
            return late

        remaining = deadline - asyncio.get_running_loop().time()
        if await cache.wait_until(lambda: not missing(), max(remaining, 0.0)):
            return set()
        late = missing()
        log.warning(
            "new_partition_leaders_unknown",
            topics=sorted(late),
            hint="answered REQUEST_TIMED_OUT: created, but this broker's metadata does not "
            "know every leader",
        )
        return late

    async def delete_topics(
        self, names: Sequence[str], *, timeout_ms: int = 0, session: Session = NO_SESSION
    ) -> list[DeletableTopicResult]:
        unique = list(dict.fromkeys(names))
        duplicates = duplicate_names(names)
        denied = set(unique) - self._auth.allowed_names(
            session, "DeleteTopics", ResourceType.TOPIC, unique
        )
        # A name no topic can have is not looked up: "" or ".." would name other znodes.
        invalid = {n for n in unique if not _is_valid_topic_name(n)}
        internal = {n for n in unique if n in INTERNAL_TOPICS}
        wanted = [n for n in unique if n not in duplicates | denied | invalid | internal]
        topic_ids: dict[str, str] = {}
        for name in wanted:
            read = await asyncio.to_thread(self._zk.get_topic, name)
            if read is not None and read.value.topic_id:
                topic_ids[name] = read.value.topic_id
        outcome = (
            await asyncio.wrap_future(self._controller.delete_topics(wanted)) if wanted else {}
        )
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        results = []
        for name in unique:
            topic_id = topic_ids.get(name, "")
            if name in duplicates:
                error, message = ErrorCode.INVALID_REQUEST, "Duplicate topic in the request."
            elif name in denied:
                error, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, _DENIED
            elif name in invalid:
                error, message = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"topic {name!r} does not exist",
                )
            elif name in internal:
                error, message = (
                    ErrorCode.INVALID_REQUEST,
                    f"Topic {name} is a kafka internal topic and is not allowed to be marked "
                    "for deletion.",
                )
                log.warning("delete_topic_refused", topic=name, reason="internal topic")
            else:
                error, message = outcome[name]
                # Kafka answers once the deletion completed, or REQUEST_TIMED_OUT.
                if (
                    error == ErrorCode.NONE
                    and timeout_ms > 0
                    and not await self._wait_topic_gone(name, deadline)
                ):
                    error, message = ErrorCode.REQUEST_TIMED_OUT, "Deletion is still in progress."
            results.append(DeletableTopicResult(name, error, message, topic_id))
        return results

    async def _wait_topic_gone(self, topic: str, deadline: float) -> bool:
        while True:
            if await asyncio.to_thread(self._zk.get_topic, topic) is None:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    async def create_partitions(
        self,
        topics: Sequence[CreatePartitionsTopic],
        *,
        validate_only: bool = False,
        timeout_ms: int = 0,
        session: Session = NO_SESSION,
    ) -> list[TopicResult]:
        """With ``timeout_ms`` > 0 the answer waits, as create_topics' does, until this
        broker's metadata has a leader for every new partition."""
        deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
        duplicates = duplicate_names(t.name for t in topics)
        names = [t.name for t in topics]
        denied = set(names) - self._auth.allowed_names(
            session, "CreatePartitions", ResourceType.TOPIC, names
        )
        invalid = {t.name for t in topics if not _is_valid_topic_name(t.name)}
        wanted = {
            t.name: NewPartitions(t.count, t.assignments)
            for t in topics
            if t.name not in duplicates | denied | invalid
        }
        outcome = (
            await asyncio.wrap_future(
                self._controller.create_partitions(wanted, validate_only=validate_only)
            )
            if wanted
            else {}
        )
        results = []
        for topic in _unique(topics):
            if topic.name in duplicates:
                results.append(
                    TopicResult(
                        topic.name, ErrorCode.INVALID_REQUEST, "Duplicate topic in the request."
                    )
                )
            elif topic.name in denied:
                results.append(
                    TopicResult(
                        topic.name,
                        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        "The topic authorization is failed.",
                    )
                )
            elif topic.name in invalid:
                results.append(
                    TopicResult(
                        topic.name,
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"Topic '{topic.name}' not found.",
                    )
                )
            else:
                error, message = outcome[topic.name]
                results.append(TopicResult(topic.name, error, message))
        if not validate_only and timeout_ms > 0:
            grown = {r.name: (wanted[r.name].count, "") for r in results if r.error_code == 0}
            late = await self._await_leaders(grown, deadline)
            results = [
                TopicResult(
                    r.name,
                    ErrorCode.REQUEST_TIMED_OUT,
                    f"The partitions of topic '{r.name}' were created, but not every one had a "
                    f"leader in broker {self._config.broker_id}'s metadata within "
                    f"{timeout_ms} ms.",
                )
                if r.name in late
                else r
                for r in results
            ]
        return results

    async def elect_leaders(
        self,
        election_type: int,
        partitions: Sequence[TopicPartition] | None,
        *,
        session: Session = NO_SESSION,
    ) -> ElectLeadersResult:
        """``election_type`` is Kafka's number (ElectionType); ``partitions`` None means every
        partition."""
        if not self._auth.allows(session, "ElectLeaders", ResourceType.CLUSTER):
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return ElectLeadersResult(
                code,
                [PartitionResult(tp.topic, tp.partition, code) for tp in partitions or ()],
            )
        if not self._controller.is_active:
            return ElectLeadersResult(ErrorCode.NOT_CONTROLLER)
        try:
            kind = ElectionType(election_type)
        except ValueError:
            return ElectLeadersResult(ErrorCode.INVALID_REQUEST)
        results = await asyncio.wrap_future(self._controller.elect_leaders(kind, partitions))
        if any(r.error == ErrorCode.NOT_CONTROLLER for r in results.values()) or (
            partitions is None and not self._controller.is_active
        ):
            return ElectLeadersResult(ErrorCode.NOT_CONTROLLER)
        return ElectLeadersResult(
            partitions=[
                PartitionResult(tp.topic, tp.partition, results[tp].error, results[tp].message)
                for tp in sorted(results)
            ]
        )


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_N = TypeVar("_N", bound=_Named)


def _unique(items: Iterable[_N]) -> list[_N]:
    """The first item of each name, in order."""
    first: dict[str, _N] = {}
    for item in items:
        first.setdefault(item.name, item)
    return list(first.values())


def _is_valid_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except KafkaError:
        return False
    return True


def _create_error(name: str, error: ErrorCode, message: str) -> CreatableTopicResult:
    return CreatableTopicResult(name, error, message if error != ErrorCode.NONE else "")
