"""The brokers ``minikafka replay`` runs: ``python -m minikafka broker`` processes on 127.0.0.1.

    brokers = LocalBrokers(workdir, zk_connect, broker_ids=(1, 2, 3), overrides={...})
    brokers.start(1)                    # writes broker-1/server.properties, does not wait
    brokers.kill(1); brokers.start(1)   # SIGKILL; restart (the broker waits for its old
                                        # registration to expire before it registers again)
    brokers.stop(2)                     # SIGTERM: a controlled shutdown, waits for the exit
    brokers.pause(3); brokers.resume(3) # SIGSTOP / SIGCONT
    brokers.replica_records(1, "t", 0)  # [(offset, value)], read from broker 1's segment files
    brokers.lose_unflushed_tail(2, "t", 0, 1)   # a power cut: offsets >= 1 never reached disk
    brokers.close()                     # kills whatever still runs

Each broker ``<id>`` lives in ``workdir/broker-<id>/``: ``server.properties``, ``logs/`` (its
log.dirs) and ``broker.log`` (stdout and stderr, one JSON event per line). One gRPC listener
carries clients, replication and the controller's requests.

The replay reads the segment files itself for two things a client cannot ask a broker: what a
follower holds (a consumer reads only the leader) and a power cut's loss of what the page cache
held (a SIGKILL loses nothing the kernel has). The bytes are proto/records.py's; nothing here
imports the broker.

Not thread-safe: drive it from one thread.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from minikafka.client.cli.replay.local_zookeeper import free_port
from minikafka.proto.log_files import LOG_SUFFIX, parse_log_file_name
from minikafka.proto.records import decode_records, iter_batch_headers

__all__ = ["LocalBrokers"]

# Short enough that a failover takes seconds: a SIGKILLed broker is noticed when its
# ZooKeeper session expires.
DEFAULT_OVERRIDES: Mapping[str, str] = {
    "num.partitions": "1",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "1",
    "zookeeper.session.timeout.ms": "3000",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "replica.high.watermark.checkpoint.interval.ms": "200",
    "controlled.shutdown.max.retries": "3",
    "controlled.shutdown.retry.backoff.ms": "200",
    "request.timeout.ms": "5000",
    "auto.leader.rebalance.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
}

_live: set[subprocess.Popen[bytes]] = set()


@atexit.register
def _kill_leftovers() -> None:
    for process in list(_live):
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.kill()


class LocalBrokers:
    """See the module docstring."""

    def __init__(
        self,
        workdir: Path,
        zk_connect: str,
        broker_ids: Iterable[int] = (1, 2, 3),
        overrides: Mapping[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.zk_connect = zk_connect
        self.overrides = {**DEFAULT_OVERRIDES, **(overrides or {})}
        self.ports = {broker_id: free_port() for broker_id in broker_ids}
        self._processes: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.ports)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.address(b) for b in self.broker_ids)

    def address(self, broker_id: int) -> str:
        return f"127.0.0.1:{self.ports[broker_id]}"

    def control_address(self, broker_id: int) -> str:
        return self.address(broker_id)  # one listener carries everything

    def root(self, broker_id: int) -> Path:
        return self.workdir / f"broker-{broker_id}"

    def log_dir(self, broker_id: int) -> Path:
        return self.root(broker_id) / "logs"

    def output_file(self, broker_id: int) -> Path:
        return self.root(broker_id) / "broker.log"

    def running(self, broker_id: int) -> bool:
        process = self._processes.get(broker_id)
        return process is not None and process.poll() is None

    # --- processes -------------------------------------------------------------------------

    def start(self, broker_id: int, extra: Mapping[str, str] | None = None) -> None:
        if self.running(broker_id):
            raise RuntimeError(f"broker {broker_id} is already running")
        root = self.root(broker_id)
        root.mkdir(parents=True, exist_ok=True)
        props = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://{self.address(broker_id)}",
            "log.dirs": str(self.log_dir(broker_id)),
            "zookeeper.connect": self.zk_connect,
            **self.overrides,
            **(extra or {}),
        }
        config = root / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}
        env.update(KAFKA_LOG_FORMAT="json", PYTHONUNBUFFERED="1")
        with self.output_file(broker_id).open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "minikafka", "broker", "--config", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # a Ctrl-C at the replay does not hit the brokers first
            )
        self._processes[broker_id] = process
        _live.add(process)

    def kill(self, broker_id: int) -> None:
        """SIGKILL (after a SIGCONT: a paused process dies all the same), and wait."""
        process = self._processes.get(broker_id)
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.kill()
            process.wait(10)
        if process is not None:
            _live.discard(process)

    def stop(self, broker_id: int, timeout_s: float = 30.0) -> None:
        """SIGTERM, a controlled shutdown; SIGKILL if it has not exited in ``timeout_s``."""
        process = self._processes.get(broker_id)
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill(broker_id)
        _live.discard(process)

    def pause(self, broker_id: int) -> None:
        self._signal(broker_id, signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        self._signal(broker_id, signal.SIGCONT)

    def _signal(self, broker_id: int, signum: int) -> None:
        process = self._processes.get(broker_id)
        if process is None or process.poll() is not None:
            raise RuntimeError(f"broker {broker_id} is not running")
        process.send_signal(signum)

    def close(self) -> None:
        for broker_id in self.broker_ids:
            self.kill(broker_id)

    # --- files -----------------------------------------------------------------------------

    def log_events(self, broker_id: int, event: str) -> list[dict[str, object]]:
        """The broker's JSON log lines of one event, every run of it."""
        path = self.output_file(broker_id)
        found = []
        if path.exists():
            for line in path.read_text("utf-8", "replace").splitlines():
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if isinstance(item, dict) and item.get("event") == event:
                    found.append(item)
        return found

    def _segments(self, broker_id: int, topic: str, partition: int) -> list[Path]:
        directory = self.log_dir(broker_id) / f"{topic}-{partition}"
        named = []
        for path in directory.glob(f"*{LOG_SUFFIX}"):
            parsed = parse_log_file_name(path.name)
            if parsed is not None and parsed.suffix == LOG_SUFFIX:
                named.append((parsed.offset, path))
        return [path for _, path in sorted(named)]

    def replica_records(
        self, broker_id: int, topic: str, partition: int
    ) -> list[tuple[int, bytes | None]]:
        """(offset, value) of every record in the replica's segment files (a torn last batch
        of a running broker is left out)."""
        records: list[tuple[int, bytes | None]] = []
        for segment in self._segments(broker_id, topic, partition):
            data = segment.read_bytes()
            for position, header in iter_batch_headers(data):
                batch = data[position : position + header.size]
                records += [(r.offset, r.value) for r in decode_records(batch)]
        return records

    def lose_unflushed_tail(self, broker_id: int, topic: str, partition: int, offset: int) -> int:
        """What a power cut does to a log whose last fsync was before ``offset``: the batches
        from ``offset`` on never reached the disk. The broker must be down. Returns the bytes
        cut. (Its checkpoints may name a higher offset: recovery clamps them, as after a real
        power cut.)"""
        if self.running(broker_id):
            raise RuntimeError(f"broker {broker_id} must be down to lose its page cache")
        cut = 0
        for segment in self._segments(broker_id, topic, partition):
            data = segment.read_bytes()
            keep = len(data)
            for position, header in iter_batch_headers(data):
                if header.next_offset > offset:
                    keep = position
                    break
            if keep < len(data):
                cut += len(data) - keep
                with segment.open("r+b") as file:
                    file.truncate(keep)
        return cut
