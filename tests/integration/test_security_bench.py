"""bench/kafka_protocol_bench.py's SASL_SSL cluster and bench/connection_cost.py against it:
real brokers whose Kafka listener is TLS then SASL, logins of every mechanism timed, a wrong
password refused (so a refused login can never be timed as a fast one), and confluent-kafka
producing and consuming through the bench's own client processes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.connection_cost import connect_sasl, connect_tcp, connect_tls, setup_times, summary_ms
from bench.kafka_protocol_bench import (
    BENCH_USER,
    MECHANISMS,
    PASSWORD_ENV,
    Connections,
    Result,
    records_for,
    security_round,
    start_secured,
    time_connections,
)
from tests.integration.cluster import Cluster
from tests.integration.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.integration

_REPOSITORY = Path(__file__).resolve().parents[2]
PASSWORD = "bench-test-secret-5c1d"


@pytest.fixture
def sasl_ssl_cluster(
    zookeeper_server: ZooKeeperServer, tls_certs: Path, tmp_path: Path
) -> Iterator[Cluster]:
    cluster = start_secured(zookeeper_server, tmp_path / "cluster", "SASL_SSL", tls_certs, PASSWORD)
    try:
        yield cluster
    finally:
        cluster.close()


def test_every_login_is_timed_and_a_refused_one_fails(
    sasl_ssl_cluster: Cluster, tls_certs: Path
) -> None:
    address = sasl_ssl_cluster.brokers[1].kafka_address
    ca_file = str(tls_certs / "ca.pem")
    for mechanism in MECHANISMS:
        times = setup_times(connect_sasl(address, ca_file, mechanism, BENCH_USER, PASSWORD), 3)
        assert len(times) == 3 and all(t > 0 for t in times)
        with pytest.raises(RuntimeError, match=rf"{mechanism} refused: error code 58"):
            connect_sasl(address, ca_file, mechanism, BENCH_USER, "wrong")()
    # A TLS handshake alone succeeds on a SASL_SSL listener (SASL comes after it).
    assert len(setup_times(connect_tls(address, ca_file), 2)) == 2
    assert len(setup_times(connect_tcp(address), 2)) == 2

    out = Connections()
    time_connections(sasl_ssl_cluster, "SASL_SSL", tls_certs, PASSWORD, 4, out)
    assert sorted(out.medians) == sorted(
        f"TCP + TLS + SASL {m} login (SASL_SSL)" for m in MECHANISMS
    )
    assert all(len(v) == 1 and v[0] > 0 for v in out.p99s.values())


def test_confluent_kafka_produces_and_consumes_over_sasl_ssl(
    sasl_ssl_cluster: Cluster, tls_certs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(_REPOSITORY)  # the clients run as ``python -m bench.kafka_protocol_bench``
    monkeypatch.setitem(os.environ, PASSWORD_ENV, PASSWORD)
    result = Result()
    security_round(sasl_ssl_cluster, "SASL_SSL", tls_certs, [100, 10_000], 500, result)
    assert sorted(result.rates) == sorted(
        f"{test}|SASL_SSL"
        for test in (
            "produce 100 B RF3 acks=all",
            "consume 100 B",
            "produce 10,000 B RF3 acks=all",
            "consume 10,000 B",
        )
    )
    # Each client counted every record (it exits non-zero otherwise), through a listener that
    # serves nothing before TLS and a SASL login.
    assert all(rates[0] > 0 for rates in result.rates.values())


def test_sizes_and_percentiles() -> None:
    assert records_for(100, 1_000_000) == 1_000_000
    assert records_for(10_000, 1_000_000) == 40_000  # 4x the bytes of the 100-byte run
    assert records_for(10_000, 10) == 1
    assert summary_ms([0.001, 0.002, 0.003]) == pytest.approx((2.0, 3.0))
    times = [i / 1000 for i in range(1, 201)]  # 1..200 ms
    assert summary_ms(times) == pytest.approx((100.5, 198.0))
