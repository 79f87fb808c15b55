"""`minikafka watch` against real brokers: the change lines without a terminal, and the live
view in a real terminal (tmux), each following a broker kill."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from minikafka.client.admin import NewTopic
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory

# Broker 1 leads orders-0; broker 2 is next in line, then broker 0.
ASSIGNMENT = {0: [1, 2, 0]}


def _cluster_with_orders(cluster_factory: ClusterFactory) -> Cluster:
    cluster = cluster_factory(n_brokers=3)
    with cluster.admin() as admin:
        errors = admin.create_topics([NewTopic("orders", replica_assignment=ASSIGNMENT)])
    assert errors == {"orders": None}
    cluster.wait_for(lambda: cluster.leader("orders", 0) == 1, what="orders-0's leader")
    cluster.wait_for(lambda: len(cluster.isr("orders", 0)) == 3, what="a full ISR")
    with cluster.admin() as admin:

        def leading() -> bool:
            answer = admin.describe_replicas([1])[1]
            return not isinstance(answer, Exception) and answer.partitions[0].is_leader

        cluster.wait_for(leading, what="broker 1 leading orders-0")
    return cluster


def _watch_command(cluster: Cluster) -> list[str]:
    return [
        sys.executable, "-m", "minikafka", "watch",
        "--bootstrap-server", cluster.bootstrap_servers, "--topic", "orders",
        "--interval", "0.5",
    ]  # fmt: skip


class Lines:
    """The lines a process prints, read by a thread; ``expect`` waits for one that matches."""

    def __init__(self, stream: Iterator[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: Iterator[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))

    def expect(self, pattern: str, timeout_s: float = 40.0) -> str:
        regex = re.compile(pattern)
        for line in self.seen:
            if regex.search(line):
                return line
        deadline = time.monotonic() + timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                break
            self.seen.append(line)
            if regex.search(line):
                return line
        raise AssertionError(f"no line matching {pattern!r}; got:\n" + "\n".join(self.seen))


def test_line_mode_follows_a_kill_and_the_rejoin(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster_with_orders(cluster_factory)
    watch = subprocess.Popen(
        _watch_command(cluster),
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watch.stdout is not None
        lines = Lines(watch.stdout)
        stamp = r"^\d\d:\d\d:\d\d "
        lines.expect(stamp + r"controller \d epoch \d+$")
        first = lines.expect(stamp + r"broker 1 alive 127\.0\.0\.1:\d+ epoch \d+$")
        lines.expect(stamp + r"orders-0 leader 1 epoch 0 replicas \[1,2,0\] isr \[0,1,2\]$")

        cluster.kill(1)
        lines.expect(stamp + "broker 1 not answering$")
        lines.expect(stamp + "broker 1 dead$")
        lines.expect(
            stamp + r"orders-0 leader 1 -> 2 epoch 0 -> 1 isr \[0,1,2\] -> \[0,2\] "
            "under-replicated$"
        )

        cluster.start(1)
        lines.expect(stamp + "broker 1 alive")
        rejoined = lines.expect(stamp + r"broker 1 (alive|answering) epoch \d+$")
        assert rejoined.split()[-1] != first.split()[-1]  # registered anew: a new epoch
        lines.expect(stamp + r"orders-0 isr \[0,2\] -> \[0,1,2\] fully replicated$")

        watch.send_signal(signal.SIGINT)  # Ctrl-C
        assert watch.wait(20) == 0
        assert watch.stderr is not None
        assert watch.stderr.read() == ""
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()


def test_describe_replicas_answers_what_each_broker_knows(cluster_factory: ClusterFactory) -> None:
    cluster = _cluster_with_orders(cluster_factory)
    assert cluster.produce("orders", 0, [b"a", b"b", b"c"], acks=-1).ok
    with cluster.admin() as admin:

        def caught_up() -> bool:
            answers = admin.describe_replicas()
            return all(
                not isinstance(a, Exception) and a.partitions[0].log_end_offset == 3
                for a in answers.values()
            )

        cluster.wait_for(caught_up, what="every replica at offset 3")
        answers = admin.describe_replicas(topics=["orders"])
    assert sorted(answers) == [0, 1, 2]
    for broker_id, answer in answers.items():
        assert not isinstance(answer, Exception)
        assert answer.broker_epoch == cluster.zk.get_broker_epoch(broker_id)
        assert answer.controller_epoch == cluster.controller_epoch()
        (p,) = answer.partitions
        assert (p.topic, p.partition, p.leader, p.leader_epoch) == ("orders", 0, 1, 0)
        assert (p.replicas, sorted(p.isr), p.is_leader) == ((1, 2, 0), [0, 1, 2], broker_id == 1)
    leader = answers[1]
    assert not isinstance(leader, Exception)
    (p,) = leader.partitions
    assert (p.high_watermark, p.log_start_offset, p.log_end_offset) == (3, 0, 3)
    assert [(f.broker_id, f.log_end_offset) for f in p.followers] == [(0, 3), (2, 3)]


def test_an_unreachable_bootstrap_server_is_one_line_and_exit_1() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "minikafka", "watch", "--bootstrap-server", "127.0.0.1:1"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        "Error: NETWORK_EXCEPTION (13): cannot connect to any bootstrap server: "
        "127.0.0.1:1 (Connection refused)\n"
    )


@pytest.fixture
def tmux() -> Iterator[Callable[..., str]]:
    """``tmux(*args)`` on a tmux server of this test's own, killed afterwards."""
    if shutil.which("tmux") is None:
        if os.environ.get("CI", "").strip().lower() in ("true", "1"):
            pytest.fail("CI=true and tmux is missing (scripts/test.sh installs it)")
        pytest.skip("tmux is not installed (Debian's tmux package)")
    socket = f"minikafka-watch-{uuid.uuid4().hex[:8]}"

    def run(*args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", socket, *args], capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    yield run
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=30)


def _row(screen: str, first_cell: str) -> list[str]:
    """The cells of the table row that starts with ``first_cell`` (split on whitespace)."""
    for line in screen.splitlines():
        cells = line.split()
        if cells and cells[0] == first_cell:
            return cells
    return []


def test_the_live_view_in_a_terminal_follows_a_kill(
    cluster_factory: ClusterFactory, tmux: Callable[..., str]
) -> None:
    cluster = _cluster_with_orders(cluster_factory)
    command = " ".join(_watch_command(cluster)) + "; echo watch-exit=$?; sleep 60"
    tmux("new-session", "-d", "-s", "watch", "-x", "200", "-y", "50", "-c", str(REPO_ROOT), command)

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", "watch")

    def shows(check: Callable[[str], bool], what: str) -> str:
        def ready() -> str | None:
            shown = screen()
            return shown if check(shown) else None

        try:
            return cluster.wait_for(ready, 40, what)
        except AssertionError:
            raise AssertionError(f"{what}; the screen:\n{screen()}") from None

    before = shows(
        lambda s: _row(s, "orders-0")[:6] == ["orders-0", "1", "0", "1,2,0", "0,1,2", "0"],
        "the partition with leader 1",
    )
    assert "Brokers" in before and "Partitions" in before and "Consumer groups" in before
    broker = _row(before, "1")
    assert broker[1] == "alive" and f"127.0.0.1:{cluster.brokers[1].port}" in broker
    assert "under-replicated partitions: 0" in before

    cluster.kill(1)
    after = shows(
        lambda s: _row(s, "1")[1:2] == ["DEAD"] and _row(s, "orders-0")[1:3] == ["2", "1"],
        "broker 1 dead and broker 2 leading orders-0 in epoch 1",
    )
    partition = _row(after, "orders-0")
    assert partition[3:5] == ["1,2,0", "0,2"]
    assert partition[-1] == "under-replicated", after
    assert "under-replicated partitions: 1" in after
    assert re.search(r"orders-0 leader 1 -> 2 epoch 0 -> 1 isr \[0,1,2\] -> \[0,2\]", after)

    tmux("send-keys", "-t", "watch", "C-c")
    shows(lambda s: "watch-exit=0" in s, "the watch exiting 0 on Ctrl-C")
