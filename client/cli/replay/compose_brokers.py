"""The brokers of a running docker compose cluster, faulted through the ``docker`` CLI.

    brokers = ComposeBrokers.discover("minikafka", {1: "127.0.0.1:9092", 2: ..., 3: ...})
    brokers.kill(2)      # docker kill      (SIGKILL)
    brokers.pause(2)     # docker pause     (the cgroup freezer: SIGSTOP for every process)
    brokers.resume(2)    # docker unpause
    brokers.start(2)     # docker start
    brokers.stop(2)      # docker stop -t 30 (SIGTERM: a controlled shutdown; the compose file's
                         # stop_grace_period is 30 s)
    brokers.close()      # unpause what replay paused, start what it killed or stopped

The containers are the project's (labels ``com.docker.compose.project`` and
``com.docker.compose.service``, one-off containers left out); a container is a broker's when its
environment has ``KAFKA_BROKER_ID`` (the image's override of ``broker.id``) or, failing that,
when it publishes the host port the cluster's metadata gives for a broker. Every broker in the
metadata must have a container, and every broker's container must run when replay starts: it
leaves the cluster as it found it, so it starts from a whole one.

What no client may ask, the replica's records, is read with ``docker exec ... cat`` of its
segment files under ``log.dirs``. A controller's request goes to the container's address on the
compose network and the port of its control plane listener (``KAFKA_CONTROL_PLANE_LISTENER_NAME``
in ``KAFKA_LISTENERS``): Docker's bridge networks are routed from the host on Linux, not by
Docker Desktop (there the request answers UNREACHABLE).

Not thread-safe: drive it from one thread. ``close`` ignores Ctrl-C while it restores.
"""

from __future__ import annotations

import base64
import json
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.client.cli.replay.control import Unsupported
from minikafka.proto.records import decode_records, iter_batch_headers

__all__ = [
    "ComposeBrokers",
    "ComposeError",
    "Container",
    "DockerRunner",
    "default_project",
    "run_docker",
]

DockerRunner = Callable[[Sequence[str]], str]
"""Runs ``docker ARGS...``: its stdout, or ComposeError with its stderr."""

DEFAULT_LOG_DIRS = ("/var/lib/minikafka/data",)  # docker/server.properties
STOP_TIMEOUT_S = 30  # docker-compose.yml's stop_grace_period
_PROJECT = "com.docker.compose.project"
_SERVICE = "com.docker.compose.service"
_ONEOFF = "com.docker.compose.oneoff"


class ComposeError(Exception):
    """docker failed, or the project's containers are not the cluster's brokers."""


def run_docker(args: Sequence[str], timeout_s: float = STOP_TIMEOUT_S + 30) -> str:
    try:
        result = subprocess.run(
            ["docker", *args], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except FileNotFoundError:
        raise ComposeError("no `docker` command on this machine") from None
    except subprocess.TimeoutExpired:
        raise ComposeError(f"docker {shlex.join(args)}: no answer in {timeout_s:g} s") from None
    if result.returncode != 0:
        raise ComposeError(f"docker {shlex.join(args)}: {result.stderr.strip()}")
    return result.stdout


def default_project(directory_name: str) -> str:
    """The project name compose gives a directory's compose file: lowercase, with only
    letters, digits, ``-`` and ``_`` kept (``docker compose up`` in ``./MiniKafka.git`` makes
    ``minikafkagit``)."""
    return "".join(c for c in directory_name.lower() if c.isascii() and (c.isalnum() or c in "-_"))


@dataclass(frozen=True)
class Container:
    id: str
    service: str
    broker_id: int
    status: str  # docker's State.Status: running, paused, exited, ...
    control_address: str

    @classmethod
    def of(cls, inspected: Mapping[str, Any], addresses: Mapping[int, str]) -> Container | None:
        """The broker container ``docker inspect`` describes, or None (not a broker's)."""
        config = inspected.get("Config") or {}
        env = dict(e.split("=", 1) for e in config.get("Env") or [] if "=" in e)
        broker_id = _broker_id(env, inspected, addresses)
        if broker_id is None:
            return None
        return cls(
            id=str(inspected["Id"]),
            service=str((config.get("Labels") or {}).get(_SERVICE, inspected.get("Name", ""))),
            broker_id=broker_id,
            status=str((inspected.get("State") or {}).get("Status", "unknown")),
            control_address=_control_address(env, inspected),
        )


def _broker_id(
    env: Mapping[str, str], inspected: Mapping[str, Any], addresses: Mapping[int, str]
) -> int | None:
    raw = env.get("KAFKA_BROKER_ID")
    if raw is not None and raw.strip().lstrip("-").isdigit():
        return int(raw)
    published = {
        binding.get("HostPort")
        for bindings in ((inspected.get("HostConfig") or {}).get("PortBindings") or {}).values()
        for binding in bindings or []
    }
    for broker_id, address in addresses.items():
        if address.rpartition(":")[2] in published:
            return broker_id
    return None


def _control_address(env: Mapping[str, str], inspected: Mapping[str, Any]) -> str:
    """IP on the (first) compose network : port of the control plane listener."""
    networks = (inspected.get("NetworkSettings") or {}).get("Networks") or {}
    ip = next((n.get("IPAddress") for n in networks.values() if n.get("IPAddress")), "")
    name = env.get("KAFKA_CONTROL_PLANE_LISTENER_NAME", "")
    port = ""
    for listener in env.get("KAFKA_LISTENERS", "").split(","):
        listener_name, _, rest = listener.strip().partition("://")
        if not port or listener_name == name:
            port = rest.rpartition(":")[2]
        if listener_name == name:
            break
    return f"{ip}:{port}" if ip and port else ""


def _records(data: bytes) -> list[tuple[int, bytes | None]]:
    records: list[tuple[int, bytes | None]] = []
    for position, header in iter_batch_headers(data):
        batch = data[position : position + header.size]
        records += [(r.offset, r.value) for r in decode_records(batch)]
    return records


class ComposeBrokers:
    """See the module docstring."""

    def __init__(
        self,
        project: str,
        containers: Mapping[int, Container],
        addresses: Mapping[int, str],
        *,
        docker: DockerRunner = run_docker,
        log_dirs: Sequence[str] = DEFAULT_LOG_DIRS,
    ) -> None:
        self.project = project
        self.containers = dict(containers)
        self._addresses = dict(addresses)
        self._docker = docker
        self._log_dirs = tuple(log_dirs)
        self._paused: set[int] = set()
        self._down: set[int] = set()

    @classmethod
    def discover(
        cls,
        project: str,
        addresses: Mapping[int, str],
        *,
        docker: DockerRunner = run_docker,
        log_dirs: Sequence[str] = DEFAULT_LOG_DIRS,
    ) -> ComposeBrokers:
        """The project's broker containers, matched to ``addresses`` (the cluster's brokers
        by id, from its metadata). ComposeError unless each broker has a running container."""
        ids = docker(
            ["ps", "-a", "-q", "--no-trunc", "--filter", f"label={_PROJECT}={project}"]
        ).split()
        inspected: list[dict[str, Any]] = json.loads(docker(["inspect", *ids])) if ids else []
        containers: dict[int, Container] = {}
        for item in inspected:
            labels = (item.get("Config") or {}).get("Labels") or {}
            if labels.get(_ONEOFF, "False") == "True":
                continue
            container = Container.of(item, addresses)
            if container is not None:
                containers[container.broker_id] = container
        if not containers:
            raise ComposeError(
                f"compose project {project!r} has no broker containers (docker ps -a --filter "
                f"label={_PROJECT}={project}); name the project with --compose-project"
            )
        if set(containers) != set(addresses):
            raise ComposeError(
                f"compose project {project!r} has brokers {sorted(containers)}, the cluster at "
                f"the bootstrap server has {sorted(addresses)}: not the same cluster"
            )
        idle = [f"{c.service} is {c.status}" for c in containers.values() if c.status != "running"]
        if idle:
            raise ComposeError(
                "replay starts from a whole cluster and leaves it so, but " + ", ".join(idle)
            )
        return cls(project, containers, addresses, docker=docker, log_dirs=log_dirs)

    # --- BrokerControl ---------------------------------------------------------------------

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.containers)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.address(b) for b in self.broker_ids)

    def address(self, broker_id: int) -> str:
        return self._addresses[broker_id]

    def control_address(self, broker_id: int) -> str:
        return self.containers[broker_id].control_address or self.address(broker_id)

    def _run(self, *args: str) -> str:
        return self._docker(list(args))

    def kill(self, broker_id: int) -> None:
        self._down.add(broker_id)  # first: whatever docker answers, close() starts it
        container_id = self.containers[broker_id].id
        try:
            self._run("kill", container_id)
        except ComposeError:
            if broker_id not in self._paused:
                raise
            self.resume(broker_id)  # an engine that will not kill a paused container
            self._run("kill", container_id)
        self._paused.discard(broker_id)

    def stop(self, broker_id: int) -> None:
        self._down.add(broker_id)
        if broker_id in self._paused:  # a frozen broker cannot shut down in a controlled way
            self.resume(broker_id)
        self._run("stop", "-t", str(STOP_TIMEOUT_S), self.containers[broker_id].id)

    def start(self, broker_id: int) -> None:
        self._run("start", self.containers[broker_id].id)
        self._down.discard(broker_id)

    def pause(self, broker_id: int) -> None:
        self._paused.add(broker_id)
        self._run("pause", self.containers[broker_id].id)

    def resume(self, broker_id: int) -> None:
        self._run("unpause", self.containers[broker_id].id)
        self._paused.discard(broker_id)

    def replica_records(
        self, broker_id: int, topic: str, partition: int
    ) -> list[tuple[int, bytes | None]]:
        """The segment files, oldest first (20-digit names sort by offset), through
        ``docker exec cat``; the broker's container must run."""
        directories = " ".join(shlex.quote(f"{d}/{topic}-{partition}") for d in self._log_dirs)
        script = f'for d in {directories}; do [ -d "$d" ] && cat "$d"/*.log; done; true'
        data = self._exec_bytes(self.containers[broker_id].id, script)
        return _records(data)

    def _exec_bytes(self, container_id: str, script: str) -> bytes:
        # Bytes, not text: the runner answers text, so segment bytes go through base64.
        encoded = self._run("exec", container_id, "sh", "-c", f"({script}) | base64")
        return base64.b64decode("".join(encoded.split()))

    def lose_unflushed_tail(self, broker_id: int, topic: str, partition: int, offset: int) -> int:
        raise Unsupported("a container's page cache cannot be cut apart from its disk")

    def close(self) -> None:
        """Unpause what replay paused, then start what it killed or stopped: the project as it
        was found. Tries every container; ComposeError names the ones that failed."""
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # finish putting it back
        failed: list[str] = []
        try:
            for broker_id in sorted(self._paused):
                try:
                    self.resume(broker_id)
                except ComposeError as exc:
                    failed.append(str(exc))
            for broker_id in sorted(self._down):
                try:
                    self.start(broker_id)
                except ComposeError as exc:
                    failed.append(str(exc))
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        if failed:
            raise ComposeError("could not put the cluster back: " + "; ".join(failed))
