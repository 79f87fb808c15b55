"""minikafka's peers, measured as the Kafka benches measure minikafka: Redis Streams and NATS
JetStream with 3 replicas, each on this machine, from Debian's packages.

    python -m bench.peers [--records 1000000] [--latency-rate 10000] [--latency-seconds 5]
        [--only redis|nats] [--port-base N]

For each peer, in a server (or cluster) of its own started for the run:

- produce: ``records`` records of 100 bytes, as fast as the Python client takes them
  (Redis: XADD in pipelines of 1,000, the client's batching; NATS: JetStream publishes with
  up to 4,000 acknowledgements outstanding, nats-py's default window), records/s until every
  record is acknowledged;
- consume: all of them from the start (Redis: XREAD of 10,000 at a time; NATS: an ordered
  push consumer), records/s;
- end-to-end latency at ``--latency-rate`` records/s for ``--latency-seconds``: bench/latency.py's
  schedule, exactly as bench.kafka_classic's row 8 (the receiver a process of its own, latency
  from each record's scheduled send time, the achieved send rate beside the target). The
  senders write each record without waiting for its answer, as a Kafka producer with requests
  in flight does (``redis_latency``, ``NatsPublisher`` say how); the receivers are redis-py's
  blocking XREAD and nats-py's ordered push consumer.

Redis: one ``redis-server`` (no replication: Redis replicates asynchronously and a write is
answered before any replica has it, so there is no acks=all to compare with), the stream in an
append-only file written to the page cache (appendonly yes, appendfsync no: Kafka's default,
no fsync per write), no snapshots. NATS: three ``nats-server`` processes routed into one
cluster, JetStream file storage, the stream with 3 replicas (a write is answered once a quorum
of 2 has it). Every server listens on 127.0.0.1 only, on ports from ``--port-base`` (or free
ones), keeps its data in the run's scratch directory (removed at the end) and is stopped on any
exit (bench/hygiene.py).

The clients are redis-py and nats-py (``pip install redis nats-py``); the servers Debian's
``redis-server`` and ``nats-server`` (``apt-get install redis-server nats-server``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.hygiene import add_port_base, ports_from, remove_tree, scratch_dir
from bench.latency import LatencyResult, latency_line, run_schedule, stamp

__all__ = ["MissingPeer", "PeerResult", "check_peers", "run_nats", "run_redis"]

REPO_ROOT = Path(__file__).resolve().parent.parent
RECORD_SIZE = 100
REDIS_PIPELINE = 1_000
REDIS_READ = 10_000
NATS_REPLICAS = 3
WARM_UP = 100  # records sent before a latency run's schedule (connections, the stream leader)
REDIS = "Redis Streams"
NATS = "NATS JetStream R3"

# binary or module -> how to install it
_NEEDED = {
    "redis-server": "apt-get install redis-server",
    "nats-server": "apt-get install nats-server",
    "redis": "pip install redis",
    "nats": "pip install nats-py",
}


class MissingPeer(RuntimeError):
    """A peer's server or Python client is not installed; the message says how to install it."""


def check_peers() -> None:
    """MissingPeer naming everything the peers need and lack, with the install commands."""
    missing = [
        name
        for name in _NEEDED
        if (shutil.which(name) is None if "-" in name else importlib.util.find_spec(name) is None)
    ]
    if missing:
        commands = sorted({_NEEDED[name] for name in missing})
        raise MissingPeer(f"missing {', '.join(missing)}: {'; '.join(commands)}")


def _module(name: str) -> Any:
    """redis / nats, imported when used: they are a bench extra, not the project's dependencies,
    and the project's type check runs without them."""
    return importlib.import_module(name)


@dataclass(frozen=True)
class PeerResult:
    produce: float  # records/s
    consume: float  # records/s
    latency: LatencyResult


# --- processes -----------------------------------------------------------------------------


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _start(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # stopped by the bench, not by a Ctrl-C aimed at it
        )


def _wait(ready: Callable[[], object], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            ready()
            return
        except Exception as exc:  # not up yet
            if time.monotonic() >= deadline:
                raise RuntimeError(f"{what} not ready after {timeout_s} s: {exc!r}") from None
            time.sleep(0.2)


def _latency_child(*argv: str) -> subprocess.Popen[str]:
    """A receiver process (``python -m bench.peers --...-latency-consumer ...``), its first line
    ``ready`` once it listens."""
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.peers", *argv],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    if child.stdout.readline().strip() != "ready":
        child.kill()
        child.wait()
        raise RuntimeError(f"the latency receiver {argv[0]} did not start")
    return child


def _scheduled(
    child: subprocess.Popen[str], send: Callable[[bytes], object], rate: int, seconds: float
) -> LatencyResult:
    """bench/latency.py's schedule through ``send``, then the receiver's percentiles."""
    try:
        report = run_schedule(send, rate, int(rate * seconds), RECORD_SIZE)
    except BaseException:
        child.kill()
        child.wait()
        raise
    out, _ = child.communicate(timeout=180)
    if child.returncode != 0:
        raise RuntimeError(f"the latency receiver failed ({child.returncode})")
    return LatencyResult.from_lines(out, report)


# --- Redis Streams -------------------------------------------------------------------------


@contextlib.contextmanager
def redis_server(directory: Path, ports: Callable[[], int]) -> Iterator[int]:
    """One redis-server on 127.0.0.1 (see the module docstring), its data in ``directory``;
    yields its port."""
    directory.mkdir(parents=True, exist_ok=True)
    port = ports()
    process = _start(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", str(directory),
         "--save", "", "--appendonly", "yes", "--appendfsync", "no", "--daemonize", "no"],
        directory / "redis.log",
    )  # fmt: skip
    try:
        client = _module("redis").Redis(port=port)
        _wait(client.ping, "redis-server")
        client.close()
        yield port
    finally:
        _stop(process)


def redis_produce(port: int, key: str, records: int) -> float:
    client = _module("redis").Redis(port=port)
    value = b"x" * RECORD_SIZE
    start = time.perf_counter()
    sent = 0
    while sent < records:
        pipe = client.pipeline(transaction=False)
        for _ in range(min(REDIS_PIPELINE, records - sent)):
            pipe.xadd(key, {b"v": value})
        sent += len(pipe.execute())
    elapsed = time.perf_counter() - start
    if client.xlen(key) != records:
        raise RuntimeError(f"the stream holds {client.xlen(key)} of {records} records")
    client.close()
    return records / elapsed


def redis_consume(port: int, key: str, records: int) -> float:
    client = _module("redis").Redis(port=port)
    last: bytes | str = "0-0"
    seen = 0
    start = time.perf_counter()
    while seen < records:
        answer = client.xread({key: last}, count=REDIS_READ)
        entries = answer[0][1] if answer else []
        if not entries:
            raise RuntimeError(f"read {seen} of {records} records")
        seen += len(entries)
        last = entries[-1][0]
    elapsed = time.perf_counter() - start
    client.close()
    return records / elapsed


def redis_latency(port: int, key: str, rate: int, seconds: float) -> LatencyResult:
    """The sender writes each XADD without waiting for its answer (Redis answers a connection's
    commands in order; they are read, and checked, after the run): a client that waited for
    each answer would fall behind the schedule on a busy machine, as a Kafka producer with one
    request in flight would, and time its own round trips rather than the stream's."""
    connection = _module("redis").Connection(port=port)
    connection.connect()
    for sequence in range(-WARM_UP, 0):
        connection.send_command("XADD", key, "*", "v", stamp(sequence, 0, RECORD_SIZE))
    for _ in range(WARM_UP):
        connection.read_response()
    records = int(rate * seconds)
    child = _latency_child("--redis-latency-consumer", str(port), key, str(records))
    try:
        result = _scheduled(
            child,
            lambda value: connection.send_command("XADD", key, "*", "v", value),
            rate,
            seconds,
        )
        for _ in range(records):
            connection.read_response()  # raises on an error answer
        return result
    finally:
        connection.disconnect()


def redis_latency_consumer(port: int, key: str, records: int) -> None:
    """Child process: XREAD (blocking) from the stream's start; one ``latency_line`` a record."""
    client = _module("redis").Redis(port=port)
    client.ping()
    print("ready", flush=True)
    last: bytes | str = "0-0"
    lines: list[str] = []
    deadline = time.monotonic() + 120
    while len(lines) < records and time.monotonic() < deadline:
        answer = client.xread({key: last}, count=1_000, block=100)
        now = time.time_ns()
        for entry_id, fields in answer[0][1] if answer else []:
            last = entry_id
            line = latency_line(fields[b"v"], now)
            if line is not None:
                lines.append(line)
    print("\n".join(lines), flush=True)


def run_redis(
    directory: Path, ports: Callable[[], int], records: int, rate: int, seconds: float
) -> PeerResult:
    """Produce, consume and latency on a redis-server of its own in ``directory`` (removed)."""
    try:
        with redis_server(directory, ports) as port:
            produce = redis_produce(port, "throughput", records)
            consume = redis_consume(port, "throughput", records)
            latency = redis_latency(port, "latency", rate, seconds)
    finally:
        remove_tree(directory)
    return PeerResult(produce, consume, latency)


# --- NATS JetStream, 3 replicas ------------------------------------------------------------


def nats_config(
    name: str, port: int, cluster_port: int, route_ports: list[int], store: Path
) -> str:
    """One node's config: client and route listeners on 127.0.0.1, JetStream on file storage."""
    routes = ", ".join(f"nats-route://127.0.0.1:{p}" for p in route_ports)
    return (
        f'server_name: "{name}"\n'
        f'listen: "127.0.0.1:{port}"\n'
        f'jetstream {{ store_dir: "{store}" }}\n'
        f'cluster {{ name: "bench", listen: "127.0.0.1:{cluster_port}", routes: [{routes}] }}\n'
    )


@contextlib.contextmanager
def nats_cluster(directory: Path, ports: Callable[[], int]) -> Iterator[list[str]]:
    """Three routed nats-server processes with JetStream, data in ``directory``; yields their
    client URLs once the cluster takes a stream of 3 replicas."""
    directory.mkdir(parents=True, exist_ok=True)
    client_ports = [ports() for _ in range(NATS_REPLICAS)]
    cluster_ports = [ports() for _ in range(NATS_REPLICAS)]
    processes = []
    try:
        for n in range(NATS_REPLICAS):
            node = directory / f"n{n}"
            node.mkdir()
            config = node / "nats.conf"
            config.write_text(
                nats_config(f"n{n}", client_ports[n], cluster_ports[n], cluster_ports, node)
            )
            processes.append(_start(["nats-server", "-c", str(config)], node / "nats.log"))
        urls = [f"nats://127.0.0.1:{port}" for port in client_ports]
        _wait(lambda: asyncio.run(_nats_stream(urls, "probe", "probe")), "the NATS cluster", 60)
        yield urls
    finally:
        for process in processes:
            _stop(process)


async def _nats_connect(urls: list[str]) -> Any:
    return await _module("nats").connect(servers=urls, connect_timeout=5, max_reconnect_attempts=3)


async def _nats_stream(urls: list[str], stream: str, subject: str) -> None:
    """A stream of NATS_REPLICAS replicas on file storage (raises until the cluster can)."""
    nc = await _nats_connect(urls)
    try:
        await nc.jetstream().add_stream(name=stream, subjects=[subject], num_replicas=NATS_REPLICAS)
    finally:
        await nc.close()


async def nats_produce(urls: list[str], stream: str, subject: str, records: int) -> float:
    await _nats_stream(urls, stream, subject)
    nc = await _nats_connect(urls)
    js = nc.jetstream()
    value = b"x" * RECORD_SIZE
    start = time.perf_counter()
    for _ in range(records):
        await js.publish_async(subject, value)
    await js.publish_async_completed()
    elapsed = time.perf_counter() - start
    held = (await js.stream_info(stream)).state.messages
    await nc.close()
    if held != records:
        raise RuntimeError(f"the stream holds {held} of {records} records")
    return records / elapsed


async def nats_consume(urls: list[str], subject: str, records: int) -> float:
    nc = await _nats_connect(urls)
    done = asyncio.Event()
    seen = 0

    async def on_message(msg: Any) -> None:
        nonlocal seen
        seen += 1
        if seen >= records:
            done.set()

    start = time.perf_counter()
    await nc.jetstream().subscribe(subject, cb=on_message, ordered_consumer=True)
    try:
        await asyncio.wait_for(done.wait(), 300)
    except TimeoutError:
        raise RuntimeError(f"read {seen} of {records} records") from None
    elapsed = time.perf_counter() - start
    await nc.close()
    return records / elapsed


class NatsPublisher:
    """A plain NATS publisher on one socket, for the latency sender: ``PUB <subject> <n>``
    after the protocol's CONNECT, nothing read back (verbose off: the server answers nothing
    but errors and its PINGs, two minutes apart by default, longer than a run).

    Not nats-py's publish: nats-py runs every publish through its event loop, and handing
    each one to the loop from the schedule's thread (asyncio's timers wake to the millisecond,
    so the schedule cannot run on the loop without sending in bursts) held a 10,000 records/s
    schedule to 5,500 on a 2-core machine shared with the three servers. Not JetStream's
    acknowledged publish either: the stream stores a plain publish to its subject all the
    same, and the receiver's consumer gets it only once 2 of the 3 replicas have it; the
    receiver's count checks that every record arrived. Redis's sender is as thin
    (redis_latency). Not thread-safe: the sender's thread."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("nats://").rsplit(":", 1)
        self._sock = socket.create_connection((host, int(port)), timeout=10)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        info = self._sock.recv(65536)
        if not info.startswith(b"INFO "):
            raise RuntimeError(f"not a NATS server at {url}: {info[:80]!r}")
        self._sock.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n')
        if not self._sock.recv(64).startswith(b"PONG"):
            raise RuntimeError(f"the NATS server at {url} refused the connection")

    def publish(self, subject: str, value: bytes) -> None:
        self._sock.sendall(b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(value), value))

    def close(self) -> None:
        self._sock.close()


async def _nats_warm_up(urls: list[str], stream: str, subject: str) -> None:
    await _nats_stream(urls, stream, subject)
    nc = await _nats_connect(urls)
    js = nc.jetstream()
    for sequence in range(-WARM_UP, 0):
        await js.publish(subject, stamp(sequence, 0, RECORD_SIZE))
    await nc.close()


def nats_latency(
    urls: list[str], stream: str, subject: str, rate: int, seconds: float
) -> LatencyResult:
    asyncio.run(_nats_warm_up(urls, stream, subject))
    child = _latency_child(
        "--nats-latency-consumer", ",".join(urls), subject, str(int(rate * seconds))
    )
    publisher = NatsPublisher(urls[0])
    try:
        return _scheduled(child, lambda value: publisher.publish(subject, value), rate, seconds)
    finally:
        publisher.close()


async def _nats_latency_consumer(urls: list[str], subject: str, records: int) -> None:
    nc = await _nats_connect(urls)
    lines: list[str] = []
    done = asyncio.Event()

    async def on_message(msg: Any) -> None:
        line = latency_line(msg.data, time.time_ns())
        if line is not None:
            lines.append(line)
            if len(lines) >= records:
                done.set()

    await nc.jetstream().subscribe(subject, cb=on_message, ordered_consumer=True)
    print("ready", flush=True)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done.wait(), 120)
    await nc.close()
    print("\n".join(lines), flush=True)


def run_nats(
    directory: Path, ports: Callable[[], int], records: int, rate: int, seconds: float
) -> PeerResult:
    """Produce, consume and latency on a 3-node cluster of its own in ``directory`` (removed)."""
    try:
        with nats_cluster(directory, ports) as urls:
            produce = asyncio.run(nats_produce(urls, "throughput", "throughput", records))
            consume = asyncio.run(nats_consume(urls, "throughput", records))
            latency = nats_latency(urls, "latency", "latency", rate, seconds)
    finally:
        remove_tree(directory)
    return PeerResult(produce, consume, latency)


# --- command line --------------------------------------------------------------------------


def describe(name: str, result: PeerResult) -> str:
    return (
        f"  {name}: produce {result.produce:,.0f} records/s, consume {result.consume:,.0f} "
        f"records/s, latency {result.latency.describe()}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--latency-rate", type=int, default=10_000)
    parser.add_argument("--latency-seconds", type=float, default=5.0)
    parser.add_argument("--only", choices=("redis", "nats"))
    parser.add_argument("--redis-latency-consumer", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--nats-latency-consumer", nargs=3, help=argparse.SUPPRESS)
    add_port_base(parser)
    args = parser.parse_args(argv)
    if args.redis_latency_consumer:
        port, key, count = args.redis_latency_consumer
        redis_latency_consumer(int(port), key, int(count))
        return
    if args.nats_latency_consumer:
        urls, subject, count = args.nats_latency_consumer
        asyncio.run(_nats_latency_consumer(urls.split(","), subject, int(count)))
        return
    try:
        check_peers()
    except MissingPeer as exc:
        raise SystemExit(f"bench.peers: {exc}") from None
    ports = ports_from(args)
    with scratch_dir("bench-peers-") as root:
        if args.only in (None, "redis"):
            result = run_redis(
                root / "redis", ports, args.records, args.latency_rate, args.latency_seconds
            )
            print(describe(REDIS, result))
        if args.only in (None, "nats"):
            result = run_nats(
                root / "nats", ports, args.records, args.latency_rate, args.latency_seconds
            )
            print(describe(NATS, result))


if __name__ == "__main__":
    main()
