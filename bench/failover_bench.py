"""Failover time of the docker-compose cluster: from ``docker kill`` of a partition leader to the
first acks=all produce acknowledged on that partition.

    python -m bench.failover_bench [--kills 5] [--keep] [--port-base 19092]

Runs docker-compose.yml as the compose project ``minikafka-bench`` (``up -d --build``, a wait for
every healthcheck; ``down -v`` at the end unless --keep). With the default ports (9092-9094) it
first takes the e2e tests' lock file, since both publish those. ``--port-base N`` instead runs a
copy of the compose file (next to it, removed afterwards) that publishes and advertises
N, N+1, N+2, so it can run beside an e2e session. Base images must exist
(scripts/offline-images.sh on a machine that cannot pull). Creates a topic with replication
factor 3, 3 partitions, min.insync.replicas=2.

Each round: wait until every ISR is full; a warm idempotent acks=all Producer (the Python client,
default settings) has just had a record acknowledged on partition 0; then ``docker kill`` the
leader of partition 0 and at once send to partition 0 again, one record at a time, until one is
acknowledged. The figure is the time from just before ``docker kill`` to that acknowledgement:
it covers the ZooKeeper session expiring (zookeeper.session.timeout.ms, 6 s in
docker/server.properties), the controller electing a new leader and telling the brokers, and the
client noticing and refreshing its metadata. Then the killed broker is started again (after its
session has expired, or it would exit "already registered") and the next round begins.
Prints every round and min/median/max.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from bench.hygiene import stop_on_signals
from minikafka.client.admin import AdminClient, NewTopic, raise_first
from minikafka.client.producer.producer import Producer

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]
PROJECT = "minikafka-bench"
SERVICES = ("zookeeper", "broker1", "broker2", "broker3")
DEFAULT_PORT_BASE = 9092
TOPIC = "failover-bench"
SESSION_TIMEOUT_S = 6.0  # docker/server.properties
# The e2e tests' lock (tests/e2e/conftest.py): one user of the host ports at a time.
LOCK_PATH = Path(tempfile.gettempdir()) / "minikafka-e2e.lock"


def compose_command() -> list[str]:
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    sys.exit("needs the `docker compose` plugin or `docker-compose`")


def run(command: Sequence[str], timeout: float = 600) -> str:
    result = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {result.stderr.strip()[-2000:]}")
    return result.stdout


def wait_for(condition: Callable[[], T | None], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:  # a broker may be down meanwhile
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise RuntimeError(f"no {what} within {timeout:.0f} s")
        time.sleep(0.2)


def compose_file(port_base: int) -> Path:
    """docker-compose.yml, or a copy next to it with the EXTERNAL ports moved to port_base+."""
    original = REPO / "docker-compose.yml"
    if port_base == DEFAULT_PORT_BASE:
        return original
    text = original.read_text()
    for n in range(3):
        old, new = DEFAULT_PORT_BASE + n, port_base + n
        text = text.replace(f'"127.0.0.1:{old}:{old}"', f'"127.0.0.1:{new}:{old}"')
        text = text.replace(f"EXTERNAL://127.0.0.1:{old}", f"EXTERNAL://127.0.0.1:{new}")
    copy = REPO / f".failover-bench-{port_base}.yml"
    copy.write_text(text)
    return copy


class Cluster:
    def __init__(self, file: Path) -> None:
        self.compose = [*compose_command(), "-f", str(file), "-p", PROJECT]

    def container(self, service: str) -> str:
        return run([*self.compose, "ps", "-q", service]).strip()

    def health(self, service: str) -> str:
        container = self.container(service)
        if not container:
            return "missing"
        return run(
            [
                "docker",
                "inspect",
                "-f",
                "{{if and .State.Running .State.Health}}{{.State.Health.Status}}"
                "{{else}}{{.State.Status}}{{end}}",
                container,
            ]
        ).strip()

    def wait_healthy(self, timeout: float = 240) -> None:
        """Every service healthy; a broker that exited ("already registered") is started again."""

        def healthy() -> bool:
            states = {s: self.health(s) for s in SERVICES}
            for service, state in states.items():
                if state in ("exited", "dead"):
                    run([*self.compose, "start", service])
            return all(state == "healthy" for state in states.values())

        wait_for(healthy, timeout, "healthy cluster")

    def up(self) -> None:
        run([*self.compose, "down", "-v", "--remove-orphans"])
        run([*self.compose, "up", "-d", "--build"], timeout=900)
        self.wait_healthy()

    def down(self) -> None:
        run([*self.compose, "down", "-v", "--remove-orphans"])


def full_isr(admin: AdminClient) -> bool:
    described = admin.describe_topics([TOPIC], timeout_ms=5_000)[TOPIC]
    return all(p.leader >= 0 and len(p.isr) == 3 for p in described.partitions)


def leader_of(admin: AdminClient, partition: int) -> int:
    return admin.describe_topics([TOPIC], timeout_ms=5_000)[TOPIC].partitions[partition].leader


def one_round(cluster: Cluster, admin: AdminClient, producer: Producer) -> tuple[int, float]:
    """Kill the leader of partition 0; (its id, seconds to the first acks=all ack on it)."""
    wait_for(lambda: full_isr(admin), 120, "full ISRs")
    producer.send(TOPIC, b"warm", partition=0).result(timeout=60)
    victim = leader_of(admin, 0)
    container = cluster.container(f"broker{victim}")
    before = time.monotonic()
    run(["docker", "kill", container])
    while True:
        try:
            producer.send(TOPIC, b"after kill", partition=0).result(timeout=120)
        except Exception:  # delivery timed out or failed: send again
            continue
        break
    elapsed = time.monotonic() - before
    # Start it again once its old ZooKeeper session is surely gone.
    time.sleep(max(0.0, before + SESSION_TIMEOUT_S + 1 - time.monotonic()))
    run(["docker", "start", container])
    cluster.wait_healthy()
    return victim, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running")
    parser.add_argument(
        "--port-base", type=int, default=DEFAULT_PORT_BASE, help="first EXTERNAL host port"
    )
    args = parser.parse_args()

    # stop_on_signals: a SIGTERM still takes the cluster down and removes the compose copy.
    with stop_on_signals(), contextlib.ExitStack() as stack:
        if args.port_base == DEFAULT_PORT_BASE:
            lock = stack.enter_context(LOCK_PATH.open("a"))
            print(f"waiting for {LOCK_PATH} ...", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        file = compose_file(args.port_base)
        if file.parent == REPO and file.name.startswith(".failover-bench-"):
            stack.callback(file.unlink)
        cluster = Cluster(file)
        start = time.monotonic()
        cluster.up()
        if not args.keep:
            stack.callback(cluster.down)
        print(f"cluster healthy after {time.monotonic() - start:.0f} s", flush=True)
        bootstrap = ",".join(f"127.0.0.1:{args.port_base + n}" for n in range(3))
        times: list[float] = []
        with AdminClient(bootstrap, request_timeout_ms=5_000) as admin:
            raise_first(
                admin.create_topics([NewTopic(TOPIC, 3, 3, configs={"min.insync.replicas": "2"})])
            )
            with Producer(bootstrap, acks="all") as producer:
                for n in range(1, args.kills + 1):
                    victim, elapsed = one_round(cluster, admin, producer)
                    times.append(elapsed)
                    print(
                        f"round {n}: killed broker {victim} (leader of {TOPIC}-0), "
                        f"first acks=all produce after {elapsed:.2f} s",
                        flush=True,
                    )
        print(
            f"failover over {len(times)} kills: min {min(times):.2f} s, "
            f"median {statistics.median(times):.2f} s, max {max(times):.2f} s "
            f"(zookeeper.session.timeout.ms = {SESSION_TIMEOUT_S * 1000:.0f})"
        )


if __name__ == "__main__":
    main()
