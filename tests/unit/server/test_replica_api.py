"""DescribeReplicas' core (core/replicas.py) on real ReplicaManagers: what a leader knows of
its followers, and what a follower knows of itself."""

from __future__ import annotations

from pathlib import Path

from minikafka.broker.server.core.replicas import ReplicaApi
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import Cluster, produce, run, wait_until


def test_the_leader_answers_its_followers_log_end_offsets_and_the_high_watermark(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path)
        await cluster.start()
        try:
            await cluster.elect(1, 1, [1, 2, 3])
            result = await produce(cluster[1], b"a", b"b", b"c", acks=-1)
            assert result.error_code == ErrorCode.NONE
            await wait_until(lambda: all(cluster[b].high_watermark() == 3 for b in (2, 3)))
            leader = ReplicaApi(cluster[1].replica_manager, lambda: 101)
            answer = leader.describe_replicas()
            assert (answer.broker_id, answer.broker_epoch) == (1, 101)
            assert answer.controller_epoch == cluster.controller_epoch
            (p,) = answer.partitions
            assert (p.topic, p.partition, p.is_leader, p.leader_id) == ("t", 0, True, 1)
            assert (p.leader_epoch, p.replicas, p.isr) == (1, (1, 2, 3), (1, 2, 3))
            assert (p.high_watermark, p.log_start_offset, p.log_end_offset) == (3, 0, 3)
            assert [(f.broker_id, f.log_end_offset) for f in p.followers] == [(2, 3), (3, 3)]
            assert all(f.last_caught_up_time_ms > 0 for f in p.followers)

            follower = ReplicaApi(cluster[2].replica_manager, lambda: 102).describe_replicas()
            (q,) = follower.partitions
            assert (q.is_leader, q.leader_id, q.log_end_offset, q.followers) == (False, 1, 3, ())
            assert leader.describe_replicas(["other"]).partitions == ()
        finally:
            await cluster.stop()

    run(scenario)
