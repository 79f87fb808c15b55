"""ClientQuotaManager on a fake clock: KIP-55's precedence, Kafka's Rate and throttle time."""

from __future__ import annotations

import math

import pytest

from minikafka.broker.server.quotas import (
    ClientQuotaManager,
    QuotaType,
    Rate,
    parse_quota_config,
)
from minikafka.zk.zk_data import DEFAULT_QUOTA_ENTITY as DEFAULT
from minikafka.zk.zk_data import QuotaEntity

PRODUCE = QuotaType.PRODUCE


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def manager(clock: Clock) -> ClientQuotaManager:
    return ClientQuotaManager(samples=11, window_seconds=1, time_ms=clock)


def test_precedence_is_kip_55s_order() -> None:
    quotas = manager(Clock())
    levels = [  # most specific first, each with its own rate, and the usage key it implies
        (QuotaEntity("alice", "app"), ("alice", "app")),
        (QuotaEntity("alice", DEFAULT), ("alice", "app")),
        (QuotaEntity(user="alice"), ("alice", "")),
        (QuotaEntity(DEFAULT, "app"), ("alice", "app")),
        (QuotaEntity(DEFAULT, DEFAULT), ("alice", "app")),
        (QuotaEntity(user=DEFAULT), ("alice", "")),
        (QuotaEntity(client_id="app"), ("", "app")),
        (QuotaEntity(client_id=DEFAULT), ("", "app")),
    ]
    for rate, (entity, _) in enumerate(levels, start=1):
        quotas.update(entity, {"producer_byte_rate": str(rate * 1000)})
    for rate, (entity, key) in enumerate(levels, start=1):
        limit, counted = quotas.quota(PRODUCE, "alice", "app")
        assert limit == rate * 1000, entity
        assert (counted.user, counted.client_id) == key
        quotas.update(entity, {})  # gone: the next level applies
    assert quotas.quota(PRODUCE, "alice", "app")[0] == math.inf
    assert not quotas.active


def test_a_user_quota_beats_a_client_id_default_and_types_resolve_apart() -> None:
    quotas = manager(Clock())
    quotas.update(QuotaEntity(client_id=DEFAULT), {"producer_byte_rate": "100"})
    quotas.update(QuotaEntity(user="bob"), {"consumer_byte_rate": "5000"})
    assert quotas.quota(PRODUCE, "bob", "x")[0] == 100  # bob has no produce quota of his own
    assert quotas.quota(QuotaType.FETCH, "bob", "x")[0] == 5000
    quotas.update(QuotaEntity(user="bob"), {"producer_byte_rate": "9000"})
    assert quotas.quota(PRODUCE, "bob", "x")[0] == 9000
    assert quotas.quota(PRODUCE, "carol", "x")[0] == 100


def test_rate_is_measured_over_at_least_num_minus_one_windows() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(11_000, 0)
    assert rate.window_ms(0) == 10_000  # nothing elapsed: ten whole windows assumed
    assert rate.measure(0) == pytest.approx(1100)
    assert rate.window_ms(12_500) == 10_000  # the sample expired (11 windows old)
    assert rate.measure(12_500) == 0
    for second in range(20):
        rate.record(500, second * 1000)
    assert rate.window_ms(19_500) == 10_500  # the oldest kept sample opened at 9 s
    assert rate.measure(19_500) == pytest.approx(11 * 500 / 10.5)


def test_throttle_time_is_kafkas_formula() -> None:
    clock = Clock()
    quotas = manager(clock)
    quotas.update(QuotaEntity(client_id="app"), {"producer_byte_rate": "1000"})
    assert quotas.record(PRODUCE, "ANONYMOUS", "app", 10_000) == 0  # 1000/s over 10 s: at quota
    # 11000 over 10 s is 1100/s: (1100 - 1000) / 1000 * 10 s
    assert quotas.record(PRODUCE, "ANONYMOUS", "app", 1_000) == 1_000
    assert quotas.record(PRODUCE, "someone", "other", 10**9) == 0  # no quota applies
    clock.ms += 11_000  # every sample expired
    assert quotas.record(PRODUCE, "ANONYMOUS", "app", 1_000) == 0


def test_a_throttled_client_averages_its_quota_over_the_long_run() -> None:
    """A producer sending 100 KB requests as fast as its throttle lets it, for 110 s: the
    bytes it got in are the quota's, within 2%, whatever the first burst was."""
    clock = Clock()
    quotas = manager(clock)
    quotas.update(QuotaEntity(client_id="app"), {"producer_byte_rate": str(1 << 20)})
    start, sent = clock.ms, 0
    while clock.ms - start < 110_000:
        throttle_ms = quotas.record(PRODUCE, "u", "app", 100 << 10)
        sent += 100 << 10
        clock.ms += max(throttle_ms, 5)  # 5 ms a request when not throttled
    assert sent / ((clock.ms - start) / 1000) == pytest.approx(1 << 20, rel=0.02)
    assert quotas.throttle_time_ms  # and the throttle time was counted for the metrics


def test_unrecord_takes_back_a_throttled_fetch() -> None:
    clock = Clock()
    quotas = manager(clock)
    quotas.update(QuotaEntity(client_id="c"), {"consumer_byte_rate": "1000"})
    assert quotas.record(QuotaType.FETCH, "u", "c", 10_000) == 0
    throttle = quotas.record(QuotaType.FETCH, "u", "c", 5_000)
    assert throttle == 5_000
    quotas.unrecord(QuotaType.FETCH, "u", "c", 5_000)
    assert quotas.record(QuotaType.FETCH, "u", "c", 0) == 0  # back at 1000/s: the quota


def test_request_percentage_counts_handler_time() -> None:
    clock = Clock()
    quotas = manager(clock)
    quotas.update(QuotaEntity(user="u"), {"request_percentage": "10"})
    # 10% of a handler over ten windows: one second of handling
    assert quotas.record_request_time("u", "c", 1_000_000_000) == 0
    assert quotas.record_request_time("u", "c", 1_000_000_000) == 10_000


def test_quota_configs_skip_scram_keys_and_bad_values() -> None:
    assert parse_quota_config(
        {
            "SCRAM-SHA-256": "salt=...",
            "producer_byte_rate": "1048576.0",
            "consumer_byte_rate": "fast",
            "request_percentage": "-1",
        }
    ) == {PRODUCE: 1048576.0}
