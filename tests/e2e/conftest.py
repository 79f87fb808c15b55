"""e2e fixtures: the top-level docker-compose.yml cluster (ZooKeeper + brokers 1, 2, 3), run by
pytest-docker as the project ``minikafka-e2e``, once per session, on host ports of its own.

    def test_up(compose_cluster: ComposeCluster) -> None:     # all four services healthy
        compose_cluster.bootstrap                            # "127.0.0.1:41234,..."
        compose_cluster.external_port(2)                     # broker2's gRPC host port
        compose_cluster.kafka_port(2)                        # broker2's Kafka-protocol one
    def test_failover(cluster: ComposeCluster) -> None:       # the same cluster, restored after
        cluster.kill("broker2")                              # docker-compose kill
        cluster.pause("broker3"); cluster.unpause("broker3")
        cluster.disconnect("broker1"); cluster.connect("broker1")
        cluster.start("broker2"); cluster.wait_healthy()

The suite must pass beside the README's cluster (``docker compose up`` in the checkout, the
default project and the default host ports 9092-9094, 19092-19094, 19101-19103). So the
session's cluster has its own project name and free host ports (PORTS, handed to the compose
file as MINIKAFKA_BROKER<N>_*PORT variables), and while it runs the session holds every
README port that is free with a plain listening socket (``readme_ports``): a test that still
used a default port would meet a stranger there, as it would meet the user's cluster.

Before ``up``: scripts/offline-images.sh, which keeps base images that exist, pulls missing ones,
and builds local stand-ins for those that cannot be pulled (this machine has no registry), plus
the wheelhouse the image installs from (so ``docker build`` needs no network). Then ``down -v``
(leftovers of an interrupted run), ``up -d --build``, and a wait for every service's healthcheck
with a deadline (docker-compose 1.29 has no ``up --wait``). An ``up`` that fails runs
``down -v`` at once (containers, networks and volumes it created), and the session fails with
the ``up`` error. ``down -v`` at the end, unless MINIKAFKA_E2E_KEEP=1. A lock file in the temp
dir keeps concurrent sessions on one machine from sharing (and tearing down) the one project.

Compose: the ``docker compose`` plugin when present, else ``docker-compose`` (1.29 here). No
Docker engine, or no Compose: the tests are skipped, except under CI=true where that fails them.
Every test in this directory is marked ``e2e``.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest
from pytest_docker.plugin import Services, get_docker_services

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
PROJECT = "minikafka-e2e"
SERVICES = ("zookeeper", "broker1", "broker2", "broker3")
BROKER_IDS = (1, 2, 3)
# First `up` builds the image; later ones only start containers.
HEALTHY_DEADLINE_S = float(os.environ.get("MINIKAFKA_E2E_HEALTHY_DEADLINE_S", "180"))
OFFLINE_IMAGES_TIMEOUT_S = 900
# One session at a time on this machine: the project name is fixed.
LOCK_PATH = Path(tempfile.gettempdir()) / f"{PROJECT}.lock"
LOCK_TIMEOUT_S = float(os.environ.get("MINIKAFKA_E2E_LOCK_TIMEOUT_S", "1200"))
# Container states a wait cannot leave: the compose file has no restart policy.
_TERMINAL_STATES = frozenset({"exited", "dead", "missing"})
# Ports a broker's container listens on itself (INTERNAL, KAFKA_INTERNAL, metrics): a published
# port is listened on inside the container too, so it must be none of these.
_CONTAINER_PORTS = frozenset({29092, 29093, 9101})
_DOWN = "down -v --remove-orphans"


@dataclass(frozen=True)
class HostPorts:
    """The host ports a compose project publishes, per broker id: gRPC (EXTERNAL), Kafka
    protocol (KAFKA_EXTERNAL) and metrics. ``env()`` hands them to docker-compose.yml."""

    grpc: Mapping[int, int]
    kafka: Mapping[int, int]
    metrics: Mapping[int, int]

    @classmethod
    def readme(cls) -> HostPorts:
        """The compose file's defaults: the README's cluster."""
        return cls(
            grpc={b: 9091 + b for b in BROKER_IDS},
            kafka={b: 19091 + b for b in BROKER_IDS},
            metrics={b: 19100 + b for b in BROKER_IDS},
        )

    @classmethod
    def free(cls) -> HostPorts:
        """Ports nothing listens on now (the kernel's pick), distinct, none a container's own."""
        picked: list[int] = []
        with ExitStack() as held:  # held together, so the kernel hands out nine different ones
            while len(picked) < 3 * len(BROKER_IDS):
                sock = held.enter_context(socket.socket())
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
                if port not in _CONTAINER_PORTS:
                    picked.append(port)
        n = len(BROKER_IDS)
        return cls(
            grpc=dict(zip(BROKER_IDS, picked[:n], strict=True)),
            kafka=dict(zip(BROKER_IDS, picked[n : 2 * n], strict=True)),
            metrics=dict(zip(BROKER_IDS, picked[2 * n :], strict=True)),
        )

    def env(self) -> dict[str, str]:
        variables: dict[str, str] = {}
        for b in BROKER_IDS:
            variables[f"MINIKAFKA_BROKER{b}_PORT"] = str(self.grpc[b])
            variables[f"MINIKAFKA_BROKER{b}_KAFKA_PORT"] = str(self.kafka[b])
            variables[f"MINIKAFKA_BROKER{b}_METRICS_PORT"] = str(self.metrics[b])
        return variables

    def all(self) -> list[int]:
        return [*self.grpc.values(), *self.kafka.values(), *self.metrics.values()]


# Chosen at import, as the test modules' addresses (faults.BOOTSTRAP, ...) are.
PORTS = HostPorts.free()


def _running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def _unavailable(reason: str) -> NoReturn:
    if _running_in_ci():
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.e2e)


def _run(
    command: Sequence[str], timeout: float, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=REPO,
        env=None if env is None else {**os.environ, **env},
    )


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """A reachable Docker engine, or skip (fail under CI=true)."""
    if shutil.which("docker") is None:
        _unavailable("no `docker` command: the e2e tests need a Docker engine")
    try:
        info = _run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30)
    except subprocess.TimeoutExpired:
        _unavailable("`docker info` did not answer within 30 s")
    if info.returncode != 0 or not info.stdout.strip():
        _unavailable(f"no Docker engine reachable: {info.stderr.strip()[-500:]}")


@pytest.fixture(scope="session")
def docker_compose_command(docker_engine: None) -> str:
    """``docker compose`` (the v2 plugin) when it exists, else ``docker-compose`` (v1)."""
    if _run(["docker", "compose", "version"], timeout=30).returncode == 0:
        return "docker compose"
    if shutil.which("docker-compose") is not None:
        return "docker-compose"
    _unavailable("neither the `docker compose` plugin nor `docker-compose` is installed")


@pytest.fixture(scope="session")
def docker_compose_file() -> str:
    return str(COMPOSE_FILE)


@pytest.fixture(scope="session")
def docker_compose_project_name() -> str:
    return PROJECT


@pytest.fixture(scope="session")
def base_images(docker_engine: None, e2e_lock: None) -> None:
    """Base images (pulled, or stand-ins built here) and the wheelhouse: offline-images.sh."""
    script = REPO / "scripts" / "offline-images.sh"
    try:
        result = _run([str(script)], timeout=OFFLINE_IMAGES_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{script} took more than {OFFLINE_IMAGES_TIMEOUT_S} s", pytrace=False)
    if result.returncode != 0:
        pytest.fail(
            f"{script} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
            f"{result.stderr[-3000:]}",
            pytrace=False,
        )


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@pytest.fixture(scope="session")
def e2e_lock() -> Iterator[None]:
    """Hold an exclusive lock for the session: a second pytest session on this machine (same
    project) waits for the first instead of taking its cluster down."""
    with LOCK_PATH.open("a") as lock:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while not _try_lock(lock.fileno()):
            if time.monotonic() >= deadline:
                pytest.fail(
                    f"another e2e session held {LOCK_PATH} for {LOCK_TIMEOUT_S:.0f} s",
                    pytrace=False,
                )
            time.sleep(1.0)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def readme_ports() -> Iterator[list[int]]:
    """Every README default port (docker-compose.yml's) that is free, held by a listening
    socket for the session: stands in for the user's cluster. The ports held by someone else
    already (the user's cluster itself) are left alone. The ports, held by us or not."""
    defaults = HostPorts.readme().all()
    with ExitStack() as held:
        for port in defaults:
            sock = held.enter_context(socket.socket())
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: the user's cluster, most likely
            sock.listen(1)
        yield defaults


@pytest.fixture(scope="session")
def docker_setup(e2e_lock: None, base_images: None, readme_ports: list[int]) -> list[str]:
    """The setup commands: clear leftovers, then build and start (not waiting)."""
    return [_DOWN, "up -d --build"]


@pytest.fixture(scope="session")
def docker_cleanup() -> list[str]:
    if os.environ.get("MINIKAFKA_E2E_KEEP") == "1":
        return []
    return [_DOWN]


@pytest.fixture(scope="session")
def docker_services(
    docker_compose_command: str,
    docker_compose_file: str,
    docker_compose_project_name: str,
    docker_setup: list[str],
    docker_cleanup: list[str],
) -> Iterator[Services]:
    """pytest-docker's, but the setup runs through ``ComposeCluster.up`` (with PORTS in the
    environment; a failing ``up`` takes down what it created); pytest-docker cleans up."""
    cluster = ComposeCluster(
        docker_compose_command, docker_compose_file, docker_compose_project_name
    )
    try:
        cluster.up(docker_setup)
    except AssertionError as exc:
        pytest.fail(str(exc), pytrace=False)
    with get_docker_services(
        docker_compose_command, docker_compose_file, docker_compose_project_name, [], docker_cleanup
    ) as services:
        yield services


class ComposeCluster:
    """The running compose project: service state, fault injection, health waits.

    Fault methods remember what they did, so ``restore`` can undo it (unpause, reconnect,
    start) and wait until everything is healthy again. Used from the test's thread only.
    ``ports``: the host ports it publishes (PORTS unless given); ``compose_file`` may be several
    files (an override after the first, as ``-f a -f b``); ``env``: more variables for them.
    """

    bootstrap = ",".join(f"127.0.0.1:{PORTS.grpc[b]}" for b in BROKER_IDS)

    def __init__(
        self,
        compose_command: str,
        compose_file: str | Sequence[str],
        project: str,
        ports: HostPorts = PORTS,
        env: Mapping[str, str] | None = None,
    ) -> None:
        files = [compose_file] if isinstance(compose_file, str) else list(compose_file)
        self._base = [*shlex.split(compose_command), *(a for f in files for a in ("-f", f))]
        self._base += ["-p", project]
        self.project = project
        self.ports = ports
        self._env = {**ports.env(), **(env or {})}
        self.network = f"{project}_default"
        self._paused: set[str] = set()
        self._disconnected: set[str] = set()

    # --- commands ---------------------------------------------------------------------------

    def compose(self, *args: str, timeout: float = 120) -> str:
        """Run a compose subcommand on the project; its stdout, or AssertionError."""
        result = _run([*self._base, *args], timeout=timeout, env=self._env)
        if result.returncode != 0:
            raise AssertionError(
                f"{shlex.join(args)} failed ({result.returncode}): {result.stderr.strip()}"
            )
        return result.stdout

    def up(self, commands: Sequence[str], timeout: float = OFFLINE_IMAGES_TIMEOUT_S) -> None:
        """Run the compose subcommands in turn (``down -v ...``, ``up -d --build``). When one
        fails, ``down -v --remove-orphans`` removes what the failed one had created
        (containers, networks, volumes) before the AssertionError is raised."""
        for command in commands:
            try:
                self.compose(*shlex.split(command), timeout=timeout)
            except (AssertionError, subprocess.TimeoutExpired) as exc:
                try:
                    self.compose(*shlex.split(_DOWN))
                except AssertionError as down_failed:
                    raise AssertionError(f"{exc}\nand then {down_failed}") from exc
                raise AssertionError(f"{exc}\n(removed what it created: {_DOWN})") from exc

    def leftovers(self) -> dict[str, list[str]]:
        """Containers, volumes and networks that carry the project's label, by kind."""
        label = f"label=com.docker.compose.project={self.project}"
        found = {
            "containers": self.docker("ps", "-a", "-q", "--filter", label),
            "volumes": self.docker("volume", "ls", "-q", "--filter", label),
            "networks": self.docker("network", "ls", "-q", "--filter", label),
        }
        return {kind: text.split() for kind, text in found.items()}

    @staticmethod
    def docker(*args: str, timeout: float = 60) -> str:
        result = _run(["docker", *args], timeout=timeout)
        if result.returncode != 0:
            raise AssertionError(
                f"docker {shlex.join(args)} failed ({result.returncode}): {result.stderr.strip()}"
            )
        return result.stdout

    @staticmethod
    def service(broker_id: int) -> str:
        return f"broker{broker_id}"

    @staticmethod
    def external_port(broker_id: int) -> int:
        """The host port of a broker's EXTERNAL listener (127.0.0.1 only)."""
        return PORTS.grpc[broker_id]

    @staticmethod
    def kafka_port(broker_id: int) -> int:
        """The host port of a broker's KAFKA_EXTERNAL listener (the Kafka protocol)."""
        return PORTS.kafka[broker_id]

    def container(self, service: str) -> str:
        """The id of the service's container (it exists even while stopped). By label, the
        same for both Compose versions (v2's ``ps`` leaves stopped containers out)."""
        container_id = self.docker(
            "ps",
            "-a",
            "-q",
            "--filter",
            f"label=com.docker.compose.project={self.project}",
            "--filter",
            f"label=com.docker.compose.service={service}",
            "--filter",
            "label=com.docker.compose.oneoff=False",
        ).strip()
        if not container_id:
            raise AssertionError(f"service {service} has no container")
        return container_id

    def state(self, service: str) -> str:
        """``healthy`` / ``unhealthy`` / ``starting`` for a running container with a
        healthcheck, else the container state (``exited``, ``paused``, ``running``)."""
        return self.docker(
            "inspect",
            "-f",
            "{{if and .State.Running (not .State.Paused) .State.Health}}"
            "{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}",
            self.container(service),
        ).strip()

    def logs(self, service: str, tail: int = 100) -> str:
        """The last lines of the container's output (the broker logs to stderr)."""
        result = _run(["docker", "logs", "--tail", str(tail), self.container(service)], timeout=60)
        return result.stdout + result.stderr

    def exec(self, service: str, *command: str, timeout: float = 60) -> str:
        """Run a command in the service's container (as its user); stdout."""
        return self.docker("exec", self.container(service), *command, timeout=timeout)

    # --- faults -----------------------------------------------------------------------------

    def kill(self, service: str) -> None:
        self.compose("kill", service)

    def stop(self, service: str) -> None:
        self.compose("stop", service)

    def start(self, service: str) -> None:
        self.compose("start", service)

    def pause(self, service: str) -> None:
        self.compose("pause", service)
        self._paused.add(service)

    def unpause(self, service: str) -> None:
        self.compose("unpause", service)
        self._paused.discard(service)

    def disconnect(self, service: str) -> None:
        """Take the container off the project's network (the host ports stop answering too)."""
        self.docker("network", "disconnect", self.network, self.container(service))
        self._disconnected.add(service)

    def connect(self, service: str) -> None:
        """Put it back, reachable by its service name again."""
        self.docker("network", "connect", "--alias", service, self.network, self.container(service))
        self._disconnected.discard(service)

    def restore(self) -> None:
        """Undo pauses and disconnects, start what is stopped, and wait until all are healthy.

        A broker started again within ZooKeeper's session timeout of its kill waits by itself
        for its old /brokers/ids/<id> to expire; a container that exited anyway is started
        again.
        """
        for service in sorted(self._paused):
            self.unpause(service)
        for service in sorted(self._disconnected):
            self.connect(service)
        self.compose("start")
        self.wait_healthy(restart_exited=True)

    # --- waiting ----------------------------------------------------------------------------

    def wait_healthy(
        self,
        services: Iterable[str] = SERVICES,
        timeout: float = HEALTHY_DEADLINE_S,
        *,
        restart_exited: bool = False,
    ) -> None:
        """Poll the healthchecks until every service is healthy. Fail at the deadline, or at
        once when a container has exited (nothing restarts it) unless ``restart_exited``, with
        the state, the last healthcheck output and the log tail of each unhealthy service."""
        wanted = list(services)
        start = time.monotonic()
        states: dict[str, str] = {}
        while True:
            states = {s: self._state_or_missing(s) for s in wanted}
            if all(state == "healthy" for state in states.values()):
                return
            if time.monotonic() - start >= timeout:
                break
            exited = [s for s, state in states.items() if state in _TERMINAL_STATES]
            if exited and not restart_exited:
                break
            for service in exited:
                self.start(service)
            time.sleep(1.0 if exited else 0.5)
        report = [f"not healthy after {time.monotonic() - start:.0f} s: {states}"]
        for service, state in states.items():
            if state != "healthy":
                report.append(f"--- {service} ({state}): last healthcheck")
                report.append(self._last_health_output(service))
                report.append(f"--- {service}: log tail")
                report.append(self._logs_or_missing(service))
        raise AssertionError("\n".join(report))

    def _state_or_missing(self, service: str) -> str:
        try:
            return self.state(service)
        except AssertionError:
            return "missing"

    def _logs_or_missing(self, service: str) -> str:
        try:
            return self.logs(service, tail=40)
        except AssertionError as exc:
            return str(exc)

    def _last_health_output(self, service: str) -> str:
        try:
            return self.docker(
                "inspect",
                "-f",
                "{{if .State.Health}}{{range .State.Health.Log}}{{.Output}}{{end}}{{end}}",
                self.container(service),
            ).strip()[-600:]
        except AssertionError as exc:
            return str(exc)


@pytest.fixture(scope="session")
def compose_cluster(
    docker_services: Services,
    docker_compose_command: str,
    docker_compose_file: str,
    docker_compose_project_name: str,
) -> ComposeCluster:
    """The cluster, up and healthy (shared by the session: leave it healthy, or use ``cluster``)."""
    cluster = ComposeCluster(
        docker_compose_command, docker_compose_file, docker_compose_project_name
    )
    cluster.wait_healthy()
    return cluster


@pytest.fixture
def cluster(compose_cluster: ComposeCluster) -> Iterator[ComposeCluster]:
    """The session's cluster for a test that injects faults: restored and healthy afterwards."""
    yield compose_cluster
    compose_cluster.restore()
