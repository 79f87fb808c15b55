"""num.replica.fetchers: several fetchers per source broker, each partition on the one Kafka's
rule names; in-process brokers over real gRPC (harness.py), the test playing the controller."""

from __future__ import annotations

from pathlib import Path

from minikafka.broker.replication.fetcher import ReplicaFetcher, fetcher_id
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import Cluster, produce_request, records, run, wait_until

TOPIC = "topic"
PARTITIONS = 6


def test_fetcher_id_is_kafkas() -> None:
    # Java: "topic".hashCode() == 110546223; 31 * it overflows to -868034383.
    assert [fetcher_id(TopicPartition("topic", p), 3) for p in range(4)] == [
        868034383 % 3,
        868034382 % 3,
        868034381 % 3,
        868034380 % 3,
    ]
    assert {fetcher_id(TopicPartition("topic", p), 1) for p in range(PARTITIONS)} == {0}
    # Non-ASCII names hash over UTF-16 code units, as Java's String does ("é" is 233).
    assert fetcher_id(TopicPartition("é", 0), 1000) == (31 * 233) % 1000


def test_partitions_of_one_leader_replicate_through_several_fetchers(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, (1, 2), num_replica_fetchers=2)
        await cluster.start()
        try:
            for p in range(PARTITIONS):
                await cluster.elect(1, 1, [1, 2], [1, 2], topic=TOPIC, partition=p)
            follower = cluster[2].replica_manager.fetchers
            fetchers = follower.fetchers_of(1)
            assert sorted(fetchers) == [0, 1]
            for i, fetcher in fetchers.items():
                assert isinstance(fetcher, ReplicaFetcher)
                assert set(fetcher.partitions) == {
                    TopicPartition(TOPIC, p)
                    for p in range(PARTITIONS)
                    if fetcher_id(TopicPartition(TOPIC, p), 2) == i
                }
            leader = cluster[1].replica_manager
            for round_ in range(3):
                for p in range(PARTITIONS):
                    # acks=all: the HW passes the append only once the fetcher holding the
                    # partition has brought it over.
                    results = await leader.append_records(
                        produce_request(records(f"{p}-{round_}".encode()), topic=TOPIC, partition=p)
                    )
                    assert results[0].error_code == ErrorCode.NONE, results[0]
            for p in range(PARTITIONS):
                tp = TopicPartition(TOPIC, p)
                await wait_until(
                    lambda tp=tp: cluster[2].values(tp) == cluster[1].values(tp),  # type: ignore[misc]
                    message=f"{tp} replicated",
                )
                assert cluster[2].values(tp) == [f"{p}-{r}".encode() for r in range(3)]

            # Broker 2 takes over one partition: only its fetcher lets it go, and a fetcher
            # left without partitions stops.
            moved = TopicPartition(TOPIC, 0)
            await cluster.elect(2, 2, [1, 2], [1, 2], topic=TOPIC, partition=0)
            assert follower.fetch_state(moved) is None
            assert all(moved not in f.partitions for f in follower.all_fetchers)
            for p in range(1, PARTITIONS):
                await cluster.elect(2, 2, [1, 2], [1, 2], topic=TOPIC, partition=p)
            assert follower.fetchers_of(1) == {}
            assert sorted(cluster[1].replica_manager.fetchers.fetchers_of(2)) == [0, 1]
        finally:
            await cluster.stop()

    run(scenario)
