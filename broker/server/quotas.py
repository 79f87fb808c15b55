"""Client quotas (KIP-13, KIP-55, KIP-124): Kafka's ClientQuotaManager and RequestQuotaManager.

Three quota types, each a rate per second measured per quota entity:

    producer_byte_rate   bytes of Produce requests (the request's size)
    consumer_byte_rate   bytes of Fetch answers to consumers (followers are not throttled)
    request_percentage   time spent handling the client's requests, as a percentage of one
                         handler: 1 s of handling in a 1 s window is 100

Which quota applies to a request made by ``user`` with ``client_id`` is the first of these
that is set for the type (KIP-55's order); the usage is counted per matched entity, so all the
client-ids of a user with a user quota share it, while a ``<default>`` gives each user (or
client-id) a quota of its own::

    1. /config/users/<user>/clients/<client-id>      5. /config/users/<default>/clients/<default>
    2. /config/users/<user>/clients/<default>        6. /config/users/<default>
    3. /config/users/<user>                          7. /config/clients/<client-id>
    4. /config/users/<default>/clients/<client-id>   8. /config/clients/<default>

The rate is Kafka's ``Rate`` over a ``SampledStat``: ``quota.window.num`` samples of
``quota.window.size.seconds`` each; a sample opens at the first value recorded after the last
one closed, samples older than all the windows are dropped, and the rate is the samples' sum
over the time since the oldest one opened, taken as at least ``num - 1`` whole windows (so a
new client is not throttled for its first burst). A value is recorded whether or not the
client is over its quota; when the rate is then above the quota ``q`` the throttle time is
Kafka's ``(rate - q) / q * window`` ms: how long until the rate is back at the quota if the
client sends nothing meanwhile.

Not thread-safe: lives on the broker's event loop.
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import structlog

from minikafka.broker.security.principal import Session
from minikafka.zk.zk_data import DEFAULT_QUOTA_ENTITY, QuotaEntity

__all__ = [
    "QUOTA_KEYS",
    "ClientQuotaManager",
    "QuotaKey",
    "QuotaType",
    "Rate",
    "parse_quota_config",
    "quota_user",
]

_log = structlog.get_logger("broker.quotas")


class QuotaType(enum.Enum):
    PRODUCE = "producer_byte_rate"
    FETCH = "consumer_byte_rate"
    REQUEST = "request_percentage"


QUOTA_KEYS = frozenset(t.value for t in QuotaType)


def parse_quota_config(config: Mapping[str, str]) -> dict[QuotaType, float]:
    """The quota keys of an entity's config (a user's SCRAM keys are skipped); a value that is
    no number is dropped (logged), as the broker keeps going on a hand-written znode."""
    quotas: dict[QuotaType, float] = {}
    for quota_type in QuotaType:
        raw = config.get(quota_type.value)
        if raw is None:
            continue
        try:
            value = float(raw)
        except ValueError:
            _log.error("quota_config_invalid", key=quota_type.value, value=raw)
            continue
        if math.isfinite(value) and value > 0:
            quotas[quota_type] = value
    return quotas


class Rate:
    """Kafka's ``Rate`` over a ``SampledStat`` (see the module docstring), in units per second."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self._samples = samples
        self._window_ms = window_ms
        self._starts: list[int] = []  # each sample's start, oldest first
        self._values: list[float] = []

    def record(self, value: float, now_ms: int) -> None:
        self._purge(now_ms)
        if not self._starts or now_ms - self._starts[-1] >= self._window_ms:
            self._starts.append(now_ms)
            self._values.append(0.0)
            if len(self._starts) > self._samples:
                del self._starts[0], self._values[0]
        self._values[-1] += value

    def window_ms(self, now_ms: int) -> int:
        """The time the rate is measured over, as Kafka's ``Rate.windowSize``."""
        self._purge(now_ms)
        elapsed = now_ms - (self._starts[0] if self._starts else now_ms)
        full_windows = elapsed // self._window_ms
        if full_windows < self._samples - 1:
            elapsed += (self._samples - 1 - full_windows) * self._window_ms
        return elapsed

    def measure(self, now_ms: int) -> float:
        window_ms = self.window_ms(now_ms)
        return sum(self._values) / (window_ms / 1000) if window_ms > 0 else 0.0

    def _purge(self, now_ms: int) -> None:
        expire_ms = self._samples * self._window_ms
        while self._starts and now_ms - self._starts[0] >= expire_ms:
            del self._starts[0], self._values[0]


@dataclass(frozen=True)
class QuotaKey:
    """Who a usage is counted for: the matched entity's user and client-id, each "" when the
    entity does not name it (the metric tags ``user`` and ``client-id`` Kafka gives)."""

    user: str
    client_id: str


class ClientQuotaManager:
    """Every quota in force on this broker and each entity's rates. ``time_ms`` is the clock
    (a fake one in tests)."""

    def __init__(
        self,
        samples: int = 11,
        window_seconds: int = 1,
        time_ms: Callable[[], int] = lambda: time.monotonic_ns() // 1_000_000,
    ) -> None:
        self._samples = samples
        self._window_ms = window_seconds * 1000
        self._time_ms = time_ms
        self._quotas: dict[QuotaEntity, dict[QuotaType, float]] = {}
        self._rates: dict[tuple[QuotaType, QuotaKey], Rate] = {}
        # Throttle time given per (type, user, client-id) since start, for the metrics.
        self.throttle_time_ms: dict[tuple[QuotaType, QuotaKey], int] = {}
        self.recorded: dict[tuple[QuotaType, QuotaKey], float] = {}

    @property
    def active(self) -> bool:
        """Whether any quota is set (no quota: nothing to measure, the common case)."""
        return bool(self._quotas)

    def update(self, entity: QuotaEntity, config: Mapping[str, str]) -> None:
        """The entity's config as read from ZooKeeper (at startup, after a notification)."""
        quotas = parse_quota_config(config)
        if quotas:
            self._quotas[entity] = quotas
        elif self._quotas.pop(entity, None) is None:
            return
        _log.info(
            "client_quota_updated",
            entity=entity.entity_path,
            quotas={t.value: v for t, v in quotas.items()},
        )

    def quota(self, quota_type: QuotaType, user: str, client_id: str) -> tuple[float, QuotaKey]:
        """The quota in force (KIP-55's order, see the module docstring) and the key its usage
        is counted under; ``math.inf`` when none is set."""
        default = DEFAULT_QUOTA_ENTITY
        candidates = (
            (QuotaEntity(user, client_id), QuotaKey(user, client_id)),
            (QuotaEntity(user, default), QuotaKey(user, client_id)),
            (QuotaEntity(user=user), QuotaKey(user, "")),
            (QuotaEntity(default, client_id), QuotaKey(user, client_id)),
            (QuotaEntity(default, default), QuotaKey(user, client_id)),
            (QuotaEntity(user=default), QuotaKey(user, "")),
            (QuotaEntity(client_id=client_id), QuotaKey("", client_id)),
            (QuotaEntity(client_id=default), QuotaKey("", client_id)),
        )
        for entity, key in candidates:
            limit = self._quotas.get(entity, {}).get(quota_type)
            if limit is not None:
                return limit, key
        return math.inf, QuotaKey(user, client_id)

    def record(self, quota_type: QuotaType, user: str, client_id: str, value: float) -> int:
        """Count ``value`` (bytes, or percent-seconds of handling) and return how long, in ms,
        the client is to be throttled for it (0: within its quota)."""
        if not self._quotas:
            return 0
        limit, key = self.quota(quota_type, user, client_id)
        if math.isinf(limit):
            return 0
        now = self._time_ms()
        rate = self._rates.get((quota_type, key))
        if rate is None:
            rate = self._rates[quota_type, key] = Rate(self._samples, self._window_ms)
        rate.record(value, now)
        self.recorded[quota_type, key] = self.recorded.get((quota_type, key), 0.0) + value
        observed = rate.measure(now)
        if observed <= limit:
            return 0
        throttle_ms = int((observed - limit) / limit * rate.window_ms(now))
        self.throttle_time_ms[quota_type, key] = (
            self.throttle_time_ms.get((quota_type, key), 0) + throttle_ms
        )
        return throttle_ms

    def rates(self) -> dict[tuple[QuotaType, QuotaKey], float]:
        """Each measured entity's current rate (bytes/s, or percent), for the metrics."""
        now = self._time_ms()
        return {key: rate.measure(now) for key, rate in self._rates.items()}

    def unrecord(self, quota_type: QuotaType, user: str, client_id: str, value: float) -> None:
        """Take back a recorded ``value``: a throttled fetch is answered without its records,
        as Kafka's ``unrecordQuotaSensor``."""
        _, key = self.quota(quota_type, user, client_id)
        rate = self._rates.get((quota_type, key))
        if rate is not None:
            rate.record(-value, self._time_ms())
            self.recorded[quota_type, key] = self.recorded.get((quota_type, key), 0.0) - value

    def record_request_time(self, user: str, client_id: str, handling_ns: int) -> int:
        """request_percentage: ``handling_ns`` of one handler's time, as Kafka's
        ``nanosToPercentage`` (100 per second of handling)."""
        return self.record(QuotaType.REQUEST, user, client_id, handling_ns * 100 / 1e9)


def quota_user(session: Session) -> str:
    """The user a quota is looked up for: the principal's name (``ANONYMOUS`` when the
    connection did not authenticate, as Kafka's)."""
    return session.principal.name
