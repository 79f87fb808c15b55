"""The console and perf tools as a user runs them: ``python -m minikafka ...`` against real
brokers, with Kafka's output shapes."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from typing import Any

import kafka

from minikafka.client.admin import NewTopic, raise_first
from minikafka.proto.errors import ErrorCode
from tests.integration.cluster import REPO_ROOT, Cluster
from tests.integration.conftest import ClusterFactory
from tests.integration.kafka_protocol.raw import RawKafka


def tool(
    cluster: Cluster, name: str, *argv: str, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "minikafka", name]
    if name != "perf-produce":
        command += ["--bootstrap-server", cluster.bootstrap_servers]
    command += argv
    return subprocess.run(
        command, cwd=REPO_ROOT, input=stdin, capture_output=True, text=True, timeout=timeout
    )


def create_topic(cluster: Cluster, name: str, partitions: int) -> None:
    with cluster.admin() as admin:
        raise_first(admin.create_topics([NewTopic(name, partitions, 1)]))
    for p in range(partitions):
        cluster.wait_for(lambda p=p: cluster.leader(name, p) >= 0, what=f"{name}-{p} leader")  # type: ignore[misc]


def rows(stdout: str) -> list[list[str]]:
    """The table's rows (after its header), split into cells."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    return [line.split() for line in lines[1:]]


def test_produce_then_consume_keys_and_values(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1)
    create_topic(cluster, "lines", 2)

    lines = [f"key{i % 3}:value {i}" for i in range(20)]
    produced = tool(
        cluster, "produce", "--topic", "lines",
        "--property", "parse.key=true", "--property", "key.separator=:",
        stdin="\n".join(lines) + "\n",
    )  # fmt: skip
    assert (produced.returncode, produced.stdout, produced.stderr) == (0, "", "")

    consumed = tool(
        cluster, "consume", "--topic", "lines", "--from-beginning", "--max-messages", "20",
        "--property", "print.key=true", "--property", "key.separator=:",
        "--property", "print.partition=true",
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stderr.splitlines()[-1] == "Processed a total of 20 messages"
    printed = consumed.stdout.splitlines()
    assert sorted(line.split(":", 2)[2] for line in printed) == sorted(lines)
    # one key, one partition (murmur2), and each partition keeps the order of production
    partition_of: dict[str, str] = {}
    for line in printed:
        _, partition, key, _value = line.split(":", 3)
        assert partition_of.setdefault(key, partition) == partition
    for p in ("0", "1"):
        in_partition = [ln.split(":", 2)[2] for ln in printed if ln.startswith(f"Partition:{p}:")]
        assert in_partition == [ln for ln in lines if ln in in_partition]

    single = tool(
        cluster, "consume", "--topic", "lines", "--partition", "0", "--offset", "1",
        "--max-messages", "1", "--property", "print.offset=true",
    )  # fmt: skip
    assert single.returncode == 0, single.stderr
    assert single.stdout.startswith("Offset:1\t")

    idle = tool(cluster, "consume", "--topic", "lines", "--timeout-ms", "1000")
    assert (idle.returncode, idle.stdout) == (0, "")
    assert idle.stderr.splitlines()[-1] == "Processed a total of 0 messages"

    no_key = tool(cluster, "produce", "--topic", "lines", "--property", "parse.key=true",
                  stdin="no separator here\n")  # fmt: skip
    assert no_key.returncode == 1
    assert no_key.stderr == "ERROR No key separator found on line number 1: 'no separator here'\n"

    create_topic(cluster, "headed", 1)
    with_headers = tool(
        cluster, "produce", "--topic", "headed", "--property", "parse.headers=true",
        "--property", "parse.key=true", stdin="trace:abc,empty\tk\tv\n",
    )  # fmt: skip
    assert with_headers.returncode == 0, with_headers.stderr
    shown = tool(
        cluster, "consume", "--topic", "headed", "--from-beginning", "--max-messages", "1",
        "--property", "print.headers=true", "--property", "print.key=true",
    )  # fmt: skip
    assert shown.stdout == "trace:abc,empty:null\tk\tv\n"

    # A topic nobody created is created on first use (auto.create.topics.enable, as Kafka);
    # a name no topic may have is one error line.
    created = tool(cluster, "produce", "--topic", "made-on-first-use", stdin="x\n")
    assert (created.returncode, created.stderr) == (0, "")
    illegal = tool(cluster, "produce", "--topic", "bad/name",
                   "--producer-property", "max.block.ms=1000", stdin="x\n")  # fmt: skip
    assert illegal.returncode == 1
    assert illegal.stderr.startswith(
        "ERROR Error when sending message to topic bad/name with key: null, value: 1 bytes with "
        "error: INVALID_TOPIC_EXCEPTION (17)"
    ), illegal.stderr
    assert len(illegal.stderr.splitlines()) == 1

    # A topic that does not exist fails at once, as kcat does (not after --timeout-ms)
    nowhere = tool(cluster, "consume", "--topic", "missing", "--timeout-ms", "30000", timeout=20)
    assert nowhere.returncode == 1
    assert nowhere.stderr.splitlines() == [
        "ERROR Error processing message, terminating consumer process: "
        "UNKNOWN_TOPIC_OR_PARTITION (3): Topic missing does not exist",
        "Processed a total of 0 messages",
    ]


SUMMARY = re.compile(
    r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$"
)


def test_produce_gives_up_after_kafkas_three_retries(cluster_factory: ClusterFactory) -> None:
    # An ISR (one replica) below min.insync.replicas (2): every acks=all produce is refused
    # with NOT_ENOUGH_REPLICAS, which a producer retries. The console producer gives up
    # after Kafka's 3 retries, not the library's two minutes of delivery.timeout.ms.
    cluster = cluster_factory(n_brokers=1)
    with cluster.admin() as admin:
        raise_first(
            admin.create_topics([NewTopic("short", 1, 1, configs={"min.insync.replicas": "2"})])
        )
    cluster.wait_for(lambda: cluster.leader("short", 0) == 0, what="short-0 leader")
    started = time.monotonic()
    produced = tool(cluster, "produce", "--topic", "short", stdin="hello\n", timeout=60)
    elapsed = time.monotonic() - started
    assert (produced.returncode, produced.stdout) == (1, "")
    assert produced.stderr == (
        "ERROR Error when sending message to topic short with key: null, value: 5 bytes with "
        "error: NOT_ENOUGH_REPLICAS (19): the ISR [0] of short-0 is smaller than "
        "min.insync.replicas (2)\n"
    )
    assert elapsed < 20, elapsed  # 4 attempts 100 ms apart, and the interpreter's start


def test_perf_tools_print_kafkas_summaries(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1)
    create_topic(cluster, "perf", 1)
    produced = tool(
        cluster, "perf-produce", "--topic", "perf", "--num-records", "20000",
        "--record-size", "100", "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={cluster.bootstrap_servers}", "acks=1",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    match = SUMMARY.match(produced.stdout.splitlines()[-1])
    assert match is not None, produced.stdout
    count, rate, mb = int(match[1]), float(match[2]), float(match[3])
    avg, top, p50, p99 = float(match[4]), float(match[5]), int(match[6]), int(match[8])
    assert count == 20000
    assert rate > 1000 and abs(mb - rate * 100 / 2**20) < 0.01
    assert 0 < avg <= top and p50 <= p99 <= top + 1

    consumed = tool(cluster, "perf-consume", "--topic", "perf", "--messages", "20000")
    assert consumed.returncode == 0, consumed.stderr
    header, line = consumed.stdout.splitlines()
    assert header.split(", ") == [
        "start.time", "end.time", "data.consumed.in.MB", "MB.sec", "data.consumed.in.nMsg",
        "nMsg.sec", "rebalance.time.ms", "fetch.time.ms", "fetch.MB.sec", "fetch.nMsg.sec",
    ]  # fmt: skip
    fields = line.split(", ")
    assert fields[4] == "20000"
    assert fields[2] == f"{20000 * 100 / 2**20:.4f}"


def describe(cluster: Cluster, group: str, *more: str) -> subprocess.CompletedProcess[str]:
    return tool(cluster, "groups", "--describe", "--group", group, *more)


def test_groups_list_describe_reset_delete(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1)
    create_topic(cluster, "events", 2)
    values = "".join(f"e{i}\n" for i in range(10))
    assert tool(cluster, "produce", "--topic", "events", stdin=values).returncode == 0

    # a member that stays: consumes everything, then waits for more
    member = subprocess.Popen(
        [sys.executable, "-m", "minikafka", "consume", "--bootstrap-server",
         cluster.bootstrap_servers, "--topic", "events", "--group", "readers",
         "--from-beginning", "--consumer-property", "auto.commit.interval.ms=200"],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:

        def caught_up() -> list[list[str]] | None:
            result = describe(cluster, "readers")
            table = rows(result.stdout)
            done = len(table) == 2 and all(r[5] == "0" and r[6] != "-" for r in table)
            return table if done else None

        table = cluster.wait_for(caught_up, timeout_s=40, what="the member's commits")
        assert sorted((r[0], r[1], r[2]) for r in table) == [
            ("readers", "events", "0"),
            ("readers", "events", "1"),
        ]
        assert sum(int(r[3]) for r in table) == 10  # committed = log end, lag 0
        assert tool(cluster, "groups", "--list").stdout.splitlines() == ["readers"]
        state = rows(describe(cluster, "readers", "--state").stdout)
        assert state[0][-2:] == ["Stable", "1"]

        busy = tool(cluster, "groups", "--reset-offsets", "--group", "readers",
                    "--all-topics", "--to-earliest", "--execute")  # fmt: skip
        assert busy.returncode == 1
        assert "can only be reset if the group 'readers' is inactive" in busy.stderr
    finally:
        member.send_signal(signal.SIGINT)  # Ctrl-C: commit, leave the group, report
        _, err = member.communicate(timeout=30)
    assert err.splitlines()[-1] == "Processed a total of 10 messages"

    inactive = describe(cluster, "readers")
    assert "Consumer group 'readers' has no active members." in inactive.stderr
    assert all(r[6:] == ["-", "-", "-"] for r in rows(inactive.stdout))

    reset = tool(cluster, "groups", "--reset-offsets", "--group", "readers", "--topic", "events",
                 "--to-earliest", "--execute")  # fmt: skip
    assert reset.returncode == 0, reset.stderr
    assert rows(reset.stdout) == [["readers", "events", "0", "0"], ["readers", "events", "1", "0"]]
    shifted = tool(cluster, "groups", "--reset-offsets", "--group", "readers",
                   "--topic", "events:0", "--shift-by", "2", "--dry-run")  # fmt: skip
    assert rows(shifted.stdout)[0][:3] == ["readers", "events", "0"]
    lags = {r[2]: (r[3], r[5]) for r in rows(describe(cluster, "readers").stdout)}
    assert lags["0"][0] == "0" and lags["1"][0] == "0"  # dry run changed nothing

    again = tool(cluster, "consume", "--topic", "events", "--group", "readers",
                 "--max-messages", "10", "--timeout-ms", "20000")  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert sorted(again.stdout.splitlines()) == sorted(values.splitlines())

    deleted = tool(cluster, "groups", "--delete", "--group", "readers")
    assert (deleted.returncode, deleted.stdout) == (
        0,
        "Deletion of requested consumer groups ('readers') was successful.\n",
    )
    gone = describe(cluster, "readers")
    assert (gone.returncode, gone.stderr) == (
        1,
        "Error: Consumer group 'readers' does not exist.\n",
    )
    assert tool(cluster, "groups", "--list").stdout == ""


def test_offsets_of_unknown_and_deleted_topics_go(cluster_factory: ClusterFactory) -> None:
    cluster = cluster_factory(n_brokers=1)
    create_topic(cluster, "kept", 1)
    create_topic(cluster, "doomed", 1)
    committer = kafka.KafkaConsumer(
        bootstrap_servers=cluster.kafka_bootstrap_servers, group_id="g", enable_auto_commit=False
    )
    try:
        committer.commit(
            {
                kafka.TopicPartition("kept", 0): kafka.OffsetAndMetadata(3, "", -1),
                kafka.TopicPartition("doomed", 0): kafka.OffsetAndMetadata(1, "", -1),
            }
        )
    finally:
        committer.close()

    # A topic that does not exist: refused for that partition alone, and nothing stored.
    def partition(offset: int) -> dict[str, Any]:
        return {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1}

    with RawKafka(cluster.brokers[0].kafka_address) as raw:
        answer = raw.call(
            8,
            8,
            {
                "group_id": "g",
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "topics": [
                    {"name": "kept", "partitions": [partition(4)]},
                    {"name": "never-created", "partitions": [partition(5)]},
                ],
            },
        )
    assert {t.name: t.partitions[0].error_code for t in answer.topics} == {
        "kept": ErrorCode.NONE,
        "never-created": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    with cluster.admin() as admin:
        committed = admin.list_consumer_group_offsets("g")
    assert {tp.topic: o.offset for tp, o in committed.items()} == {"kept": 4, "doomed": 1}

    # Deleting a topic removes its offsets from the group; describe shows the other topics.
    assert tool(cluster, "topics", "--delete", "--topic", "doomed").returncode == 0

    def described() -> list[list[str]] | None:
        result = describe(cluster, "g")
        return rows(result.stdout) if result.returncode == 0 else None

    table = cluster.wait_for(described, timeout_s=30, what="describe to succeed")
    assert [(r[0], r[1], r[2], r[3]) for r in table] == [("g", "kept", "0", "4")]
    # and a topic created again under the name starts without them
    create_topic(cluster, "doomed", 1)
    with cluster.admin() as admin:
        committed = admin.list_consumer_group_offsets("g")
    assert {tp.topic for tp in committed} == {"kept"}
