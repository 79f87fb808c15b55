"""e2e fixtures: the top-level docker-compose.yml cluster (ZooKeeper + brokers 1, 2, 3), run by
pytest-docker as the project ``minikafka-e2e``, once per session.

    def test_up(compose_cluster: ComposeCluster) -> None:     # all four services healthy
        compose_cluster.bootstrap                            # "127.0.0.1:9092"
        compose_cluster.external_port(2)                     # 9093
    def test_failover(cluster: ComposeCluster) -> None:       # the same cluster, restored after
        cluster.kill("broker2")                              # docker-compose kill
        cluster.pause("broker3"); cluster.unpause("broker3")
        cluster.disconnect("broker1"); cluster.connect("broker1")
        cluster.start("broker2"); cluster.wait_healthy()

Before ``up``: scripts/offline-images.sh, which keeps base images that exist, pulls missing ones,
and builds local stand-ins for those that cannot be pulled (this machine has no registry), plus
the wheelhouse the image installs from (so ``docker build`` needs no network). Then ``down -v``
(leftovers of an interrupted run), ``up -d --build``, and a wait for every service's healthcheck
with a deadline (docker-compose 1.29 has no ``up --wait``). ``down -v`` at the end, unless
MINIKAFKA_E2E_KEEP=1. A lock file in the temp dir keeps concurrent sessions on one machine from
sharing (and tearing down) the one project.

Compose: the ``docker compose`` plugin when present, else ``docker-compose`` (1.29 here). No
Docker engine, or no Compose: the tests are skipped, except under CI=true where that fails them.
Every test in this directory is marked ``e2e``.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NoReturn

import pytest
from pytest_docker.plugin import Services

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
PROJECT = "minikafka-e2e"
SERVICES = ("zookeeper", "broker1", "broker2", "broker3")
BROKER_IDS = (1, 2, 3)
# First `up` builds the image; later ones only start containers.
HEALTHY_DEADLINE_S = float(os.environ.get("MINIKAFKA_E2E_HEALTHY_DEADLINE_S", "180"))
OFFLINE_IMAGES_TIMEOUT_S = 900
# One session at a time on this machine: the project name and the host ports are fixed.
LOCK_PATH = Path(tempfile.gettempdir()) / f"{PROJECT}.lock"
LOCK_TIMEOUT_S = float(os.environ.get("MINIKAFKA_E2E_LOCK_TIMEOUT_S", "1200"))
# Container states a wait cannot leave: the compose file has no restart policy.
_TERMINAL_STATES = frozenset({"exited", "dead", "missing"})


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


def _run(command: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO
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
    project, same ports) waits for the first instead of taking its cluster down."""
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
def docker_setup(e2e_lock: None, base_images: None) -> list[str]:
    """pytest-docker's setup commands: clear leftovers, then build and start (not waiting)."""
    return ["down -v --remove-orphans", "up -d --build"]


@pytest.fixture(scope="session")
def docker_cleanup() -> list[str]:
    if os.environ.get("MINIKAFKA_E2E_KEEP") == "1":
        return []
    return ["down -v --remove-orphans"]


class ComposeCluster:
    """The running compose project: service state, fault injection, health waits.

    Fault methods remember what they did, so ``restore`` can undo it (unpause, reconnect,
    start) and wait until everything is healthy again. Used from the test's thread only.
    """

    bootstrap = "127.0.0.1:9092"

    def __init__(self, compose_command: str, compose_file: str, project: str) -> None:
        self._base = [*shlex.split(compose_command), "-f", compose_file, "-p", project]
        self.project = project
        self.network = f"{project}_default"
        self._paused: set[str] = set()
        self._disconnected: set[str] = set()

    # --- commands ---------------------------------------------------------------------------

    def compose(self, *args: str, timeout: float = 120) -> str:
        """Run a compose subcommand on the project; its stdout, or AssertionError."""
        result = _run([*self._base, *args], timeout=timeout)
        if result.returncode != 0:
            raise AssertionError(
                f"{shlex.join(args)} failed ({result.returncode}): {result.stderr.strip()}"
            )
        return result.stdout

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
        return 9091 + broker_id

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
