"""The client library prints nothing of its own: it logs through Python's ``logging``, which
the application configures (or not)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from minikafka.client.admin import NewTopic, raise_first
from tests.integration.cluster import REPO_ROOT
from tests.integration.conftest import ClusterFactory

pytestmark = pytest.mark.integration

# An application's first hour: produce (idempotent, acks=all), then consume in a group and
# commit. The client logs INFO events on the way (producer id, group joined, assignment).
APPLICATION = """
import logging, sys
import minikafka

if sys.argv[2] == "configured":
    logging.basicConfig(level=logging.DEBUG, format="%(name)s %(levelname)s %(message)s")
bootstrap = sys.argv[1]
with minikafka.Producer(bootstrap, acks="all") as producer:
    for i in range(10):
        producer.send("events", f"event-{i}".encode())
    producer.flush()
consumer = minikafka.Consumer(
    "events", bootstrap_servers=bootstrap, group_id="app", auto_offset_reset="earliest",
    enable_auto_commit=True, auto_commit_interval_ms=100, consumer_timeout_ms=3000,
)
seen = 0
for record in consumer:
    seen += 1
    if seen == 10:
        consumer.commit()
        break
consumer.close()
assert seen == 10, seen
"""


def run_application(bootstrap: str, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", APPLICATION, bootstrap, mode],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_client_prints_nothing_unless_the_application_configures_logging(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(n_brokers=1, overrides={"offsets.topic.num.partitions": "1"})
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic("events", 1, 1)]))
    cluster.wait_for(lambda: cluster.leader("events", 0) >= 0, what="a leader")

    quiet = run_application(cluster.bootstrap_servers, "quiet")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")

    configured = run_application(cluster.bootstrap_servers, "configured")
    assert configured.returncode == 0, configured.stderr
    assert configured.stdout == ""
    lines = configured.stderr.splitlines()
    assert any(line.startswith("minikafka.client.consumer.coordinator INFO group.joined ")
               for line in lines), configured.stderr  # fmt: skip
    assert any(line.startswith("minikafka.client.consumer.coordinator DEBUG group.committed ")
               for line in lines), configured.stderr  # fmt: skip
