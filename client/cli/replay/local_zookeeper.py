"""A standalone ZooKeeper for ``minikafka replay`` and the integration tests, plus free ports.

The server is Debian's ``zookeeper`` package (jars in /usr/share/java, or ``ZOOKEEPER_JAR_DIR``)
run by the machine's ``java`` as ``QuorumPeerMain <zoo.cfg>`` with a single server, bound to
127.0.0.1 only. Everything it writes stays in its work directory:

    <workdir>/zoo.cfg            tickTime, dataDir, clientPort, clientPortAddress, ...
    <workdir>/log4j.properties   sends all of ZooKeeper's logging to zookeeper.log, none to stdout
    <workdir>/zookeeper.log      ZooKeeper's own log
    <workdir>/zookeeper.out      the JVM's stdout and stderr (appended across restarts)
    <workdir>/data/              snapshots and transaction logs; kept across stop()/start()
    <workdir>/jaas.conf          with ``sasl_users``: the JAAS Server section (see below)

Usage::

    server = ZooKeeperServer(tmp_path / "zk")
    server.start()                    # waits until `ruok` answers `imok`
    brokers connect to server.connect_string + "/my-chroot"
    server.stop()                     # SIGTERM; start() again brings it back, same port and data
    server.kill()                     # SIGKILL

SASL mode (``ZooKeeperServer(workdir, sasl_users={"kafka": "kafka-secret"})``), as a Kafka
operator secures ZooKeeper: ``authProvider.1=...SASLAuthenticationProvider`` in zoo.cfg and a
JAAS ``Server`` section (``DigestLoginModule required user_kafka="kafka-secret";``) named by
``-Djava.security.auth.login.config``, so clients may log in with SASL DIGEST-MD5 and znode
ACLs may name ``sasl:kafka``. Clients that do not log in still get a session (they are
``world`` to the ACLs) unless ``require_sasl=True`` (ZooKeeper 3.7+'s
``enforce.auth.enabled=true`` with ``enforce.auth.schemes=sasl``), which closes the session of
any client that has not logged in with SASL.

``free_port()`` hands out listen ports below the kernel's ephemeral range, never twice in a
process, and under pytest-xdist from the worker's own slice (``PYTEST_XDIST_WORKER``).

It lives on the client side (it only runs processes and speaks ZooKeeper's four-letter words
over a socket: no kazoo) because ``minikafka replay`` starts its own cluster with it; the
integration tests import it from here (tests/integration/zookeeper.py).

Not thread-safe: drive one ``ZooKeeperServer`` from one thread.
"""

from __future__ import annotations

import atexit
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "ZooKeeperServer",
    "ZooKeeperStartError",
    "ZooKeeperUnavailable",
    "find_java",
    "four_letter_word",
    "free_port",
    "zookeeper_classpath",
]

DEFAULT_JAR_DIR = Path("/usr/share/java")

# Jars named by Debian's unversioned symlinks. zookeeper.jar's manifest also names most of them,
# but listing them keeps the classpath readable and independent of that manifest.
_REQUIRED_JARS = ("zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar")
_OPTIONAL_JARS = (
    "slf4j-log4j12.jar",  # routes slf4j to log4j 1.2, configured by our log4j.properties
    "log4j-1.2.jar",
    "metrics-core.jar",
    "commons-cli.jar",
    "commons-io.jar",
    "netty-buffer.jar",
    "netty-codec.jar",
    "netty-common.jar",
    "netty-handler.jar",
    "netty-resolver.jar",
    "netty-transport.jar",
    "netty-transport-native-epoll.jar",
    "netty-transport-native-unix-common.jar",
    "snappy-java.jar",
)

_LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File={log_file}
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{{ISO8601}} %-5p [%t:%C{{1}}@%L] - %m%n
"""


# Servers whose process may still run; killed when the interpreter exits, so that a test that
# forgot stop() (or pytest dying mid-test) never leaves a JVM behind.
_live_servers: set[ZooKeeperServer] = set()


@atexit.register
def _kill_leftover_servers() -> None:
    for server in list(_live_servers):
        server.kill()


class ZooKeeperUnavailable(Exception):
    """Java or ZooKeeper's jars are not installed, so no server can be started."""


class ZooKeeperStartError(Exception):
    """The server process exited or did not answer `ruok` in time; the message holds its logs."""


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise ZooKeeperUnavailable("no `java` on PATH (and JAVA_HOME is not set): install Java 17")
    return java


def zookeeper_classpath(jar_dir: Path | None = None) -> list[str]:
    """The jars QuorumPeerMain needs, or ZooKeeperUnavailable naming the first missing one."""
    jar_dir = jar_dir or Path(os.environ.get("ZOOKEEPER_JAR_DIR", DEFAULT_JAR_DIR))
    missing = [name for name in _REQUIRED_JARS if not (jar_dir / name).is_file()]
    if missing:
        raise ZooKeeperUnavailable(
            f"ZooKeeper jars missing from {jar_dir}: {', '.join(missing)} "
            "(install Debian's `zookeeper` package, or set ZOOKEEPER_JAR_DIR)"
        )
    names = _REQUIRED_JARS + tuple(n for n in _OPTIONAL_JARS if (jar_dir / n).is_file())
    return [str(jar_dir / name) for name in names]


_LOWEST_LISTEN_PORT = 10_000
_handed_out: set[int] = set()


def _ephemeral_ports() -> range:
    """The range the kernel picks outgoing connections' local ports from."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return range(int(low), int(high) + 1)
    except (OSError, ValueError):
        return range(32_768, 61_000)  # Linux's default


def _worker_ports() -> range:
    """The ports below the ephemeral range, or this pytest-xdist worker's own slice of them
    (PYTEST_XDIST_WORKER gwN of PYTEST_XDIST_WORKER_COUNT): workers never draw the same port."""
    ephemeral = _ephemeral_ports()
    ports = range(_LOWEST_LISTEN_PORT, ephemeral.start)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count <= 1:
        return ports
    slice_size = len(ports) // count
    start = ports.start + int(worker[2:]) * slice_size
    return range(start, start + slice_size)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now, for a server that binds it later (and again on restart).

    Drawn below the kernel's ephemeral range, and never twice in one process: a port from the
    ephemeral range can be taken in between by any outgoing connection's local end (a client's,
    ZooKeeper's, another broker's), and the broker bound to it later fails to start.
    """
    candidates = [p for p in _worker_ports() if p not in _handed_out]
    random.shuffle(candidates)
    for port in candidates[:200]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # no room below the range
        sock.bind((host, 0))
        chosen: int = sock.getsockname()[1]
        return chosen


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 1.0) -> str:
    """Send a ZooKeeper four-letter command and return the whole answer ('' when refused)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(word.encode("ascii"))
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", "replace")
    except OSError:
        return ""


class ZooKeeperServer:
    """One standalone ZooKeeper process; see the module docstring."""

    host = "127.0.0.1"

    def __init__(
        self,
        workdir: Path,
        *,
        port: int | None = None,
        tick_time_ms: int = 250,
        max_session_timeout_ms: int = 60_000,
        sasl_users: Mapping[str, str] | None = None,
        require_sasl: bool = False,
    ) -> None:
        if require_sasl and not sasl_users:
            raise ValueError("require_sasl needs sasl_users: nobody could log in")
        self.workdir = workdir
        self.sasl_users = dict(sasl_users or {})
        self.require_sasl = require_sasl
        self.port = port if port is not None else free_port(self.host)
        self.tick_time_ms = tick_time_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self._java = find_java()
        self._classpath = zookeeper_classpath()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def config_file(self) -> Path:
        return self.workdir / "zoo.cfg"

    @property
    def log_file(self) -> Path:
        return self.workdir / "zookeeper.log"

    @property
    def output_file(self) -> Path:
        return self.workdir / "zookeeper.out"

    @property
    def jaas_file(self) -> Path:
        return self.workdir / "jaas.conf"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout_s: float = 30.0) -> None:
        """Start the process (same port, same data) and wait until it serves."""
        if self.running:
            return
        self._write_config()
        command = [
            self._java,
            "-Xms32m",
            "-Xmx256m",
            "-XX:+UseSerialGC",
            f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}",
            f"-Dzookeeper.log.dir={self.workdir}",
            *([f"-Djava.security.auth.login.config={self.jaas_file}"] if self.sasl_users else []),
            "-cp",
            os.pathsep.join(self._classpath),
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            str(self.config_file),
        ]
        with self.output_file.open("ab") as out:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,  # a Ctrl-C aimed at pytest does not hit the JVM first
            )
        _live_servers.add(self)
        self._wait_until_serving(timeout_s)

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM and wait; SIGKILL if it does not exit in time."""
        self._signal_and_wait(signal.SIGTERM, timeout_s)

    def kill(self) -> None:
        self._signal_and_wait(signal.SIGKILL, 10.0)

    def describe_failure(self) -> str:
        """The tail of ZooKeeper's stdout/stderr and log, for a failure message."""
        parts = []
        for path in (self.output_file, self.log_file):
            text = path.read_text("utf-8", "replace") if path.exists() else "(missing)"
            parts.append(f"--- {path} (last 60 lines) ---\n" + "\n".join(text.splitlines()[-60:]))
        return "\n".join(parts)

    def _write_config(self) -> None:
        data_dir = self.workdir / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(
            "\n".join(
                [
                    f"tickTime={self.tick_time_ms}",
                    f"dataDir={data_dir}",
                    f"clientPort={self.port}",
                    f"clientPortAddress={self.host}",
                    f"minSessionTimeout={2 * self.tick_time_ms}",
                    f"maxSessionTimeout={self.max_session_timeout_ms}",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=ruok",
                    *self._sasl_config(),
                    "",
                ]
            )
        )
        if self.sasl_users:
            self.jaas_file.write_text(
                "Server {\n"
                "    org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                + "".join(
                    f'    user_{user}="{password}"\n' for user, password in self.sasl_users.items()
                )
                + "    ;\n};\n"
            )
        (self.workdir / "log4j.properties").write_text(
            _LOG4J_PROPERTIES.format(log_file=self.log_file)
        )

    def _sasl_config(self) -> list[str]:
        if not self.sasl_users:
            return []
        lines = ["authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"]
        if self.require_sasl:
            lines += ["enforce.auth.enabled=true", "enforce.auth.schemes=sasl"]
        return lines

    def _wait_until_serving(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                code = self._process.returncode
                self._process = None
                _live_servers.discard(self)
                raise ZooKeeperStartError(
                    f"ZooKeeper exited with code {code} during startup\n{self.describe_failure()}"
                )
            if four_letter_word(self.host, self.port, "ruok") == "imok":
                return
            time.sleep(0.05)
        self.kill()
        raise ZooKeeperStartError(
            f"ZooKeeper did not answer ruok on {self.connect_string} within {timeout_s}s\n"
            f"{self.describe_failure()}"
        )

    def _signal_and_wait(self, sig: signal.Signals, timeout_s: float) -> None:
        process, self._process = self._process, None
        _live_servers.discard(self)
        if process is None or process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
