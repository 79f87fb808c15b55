"""What the broker's timers cost an idle broker, per partition count (issue 18).

    python -m bench.periodic_work_bench [--partitions 1000,10000] [--rounds 5]

One in-process broker (a ReplicaManager and its LogManager on a temporary dir, the unit tests'
harness with an in-memory ZooKeeper) leads N partitions of replication factor 3 whose
followers never fetch (replica.lag.time.max.ms is an hour, so nobody leaves the ISR). Each
piece of periodic work runs ``--rounds`` times; the median and range are printed with its
interval at Kafka's defaults and the median's share of the interval (wall clock: an fsync's
wait counts, though it costs no CPU):

- ISR expiry (every replica.lag.time.max.ms / 2), over every hosted partition;
- the high watermark checkpoint (replica.high.watermark.checkpoint.interval.ms): written
  (what it costs when a HW moved) and skipped (no HW moved since the last write);
- the flush scheduler (every second): as it runs when no log rolled, beside asking every log
  ``flush_due`` (what it did before it kept the set of logs a roll left a flush pending for);
- retention (log.retention.check.interval.ms), the recovery-point and log-start-offset
  checkpoints (log.flush.offset.checkpoint.interval.ms) and producer-id expiry
  (producer.id.expiration.check.interval.ms), each over every log.

It also prints how long the one LeaderAndIsr that made the broker leader of all N took.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

import structlog

from bench.codec_bench import yardstick
from bench.hygiene import scratch_dir
from bench.stats import summary
from minikafka.broker.replication.requests import LeaderAndIsrPartitionState
from minikafka.proto.cluster_state import PartitionState
from tests.unit.replication.harness import TOPIC, Cluster

HOUR_MS = 3_600_000
# (work, interval in seconds at Kafka's defaults)
INTERVALS = {
    "ISR expiry": 15.0,
    "HW checkpoint, a HW moved (written)": 5.0,
    "HW checkpoint, no HW moved (skipped)": 5.0,
    "flush scheduler, every log asked": 1.0,
    "flush scheduler, no log rolled": 1.0,
    "retention": 300.0,
    "recovery-point and log-start checkpoints": 60.0,
    "producer-id expiry": 600.0,
}


async def _times(rounds: int, work: Callable[[], object]) -> list[float]:
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        result = work()
        if isinstance(result, Awaitable):
            await result
        times.append(time.perf_counter() - began)
    return times


async def measure(partitions: int, rounds: int) -> tuple[float, dict[str, list[float]]]:
    """Seconds the LeaderAndIsr took, and the seconds of each round of each periodic work."""
    with scratch_dir("periodic-work-bench-") as root:
        cluster = Cluster(root, broker_ids=(1,), replica_lag_time_max_ms=HOUR_MS)
        await cluster.start()
        try:
            node = cluster[1]
            states = []
            for partition in range(partitions):
                version = cluster.zk.set_state(TOPIC, partition, PartitionState(1, 1, (1, 2, 3), 1))
                node.metadata.partitions.add((TOPIC, partition))
                states.append(
                    LeaderAndIsrPartitionState(
                        topic=TOPIC,
                        partition=partition,
                        controller_epoch=1,
                        leader=1,
                        leader_epoch=1,
                        isr=(1, 2, 3),
                        partition_epoch=version,
                        replicas=(1, 2, 3),
                    )
                )
            request = replace(
                cluster.leader_and_isr(1, 1, [1, 2, 3], [1, 2, 3]), partition_states=states
            )
            rm = node.replica_manager
            log_manager = node.log_manager
            assert log_manager is not None
            began = time.perf_counter()
            await rm.become_leader_or_follower(request)
            leader_and_isr = time.perf_counter() - began

            def now_ms() -> int:
                return int(time.time() * 1000)

            def ask_every_log() -> None:
                now = now_ms()
                for log in log_manager.all_logs():
                    log.flush_due(now)

            def expire_producers() -> None:
                now = now_ms()
                for partition in rm.partitions.values():
                    partition.producer_state.remove_expired_producers(now, 86_400_000)

            def checkpoint_offsets() -> None:
                log_manager.checkpoint_recovery_points()
                log_manager.checkpoint_log_start_offsets()

            await rm.checkpoint_high_watermarks()
            log_manager.prepare_flushes(now_ms())  # each new log is asked once
            times = {
                # The timer's own callback: the work it does, nothing around it.
                "ISR expiry": await _times(rounds, rm._maybe_shrink_isr),
                "HW checkpoint, a HW moved (written)": await _times(
                    rounds,
                    lambda: asyncio.to_thread(
                        log_manager.write_high_watermarks, rm.high_watermarks()
                    ),
                ),
                "HW checkpoint, no HW moved (skipped)": await _times(
                    rounds, rm.checkpoint_high_watermarks
                ),
                "flush scheduler, every log asked": await _times(rounds, ask_every_log),
                "flush scheduler, no log rolled": await _times(
                    rounds, lambda: log_manager.prepare_flushes(now_ms())
                ),
                "retention": await _times(
                    rounds, lambda: log_manager.cleanup(now_ms(), rm.high_watermarks())
                ),
                "recovery-point and log-start checkpoints": await _times(
                    rounds, checkpoint_offsets
                ),
                "producer-id expiry": await _times(rounds, expire_producers),
            }
            return leader_and_isr, times
        finally:
            await cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    counts = [int(n) for n in args.partitions.split(",")]
    results = {n: asyncio.run(measure(n, args.rounds)) for n in counts}
    print(f"median (range) of {args.rounds} rounds, {time.strftime('%Y-%m-%d')}, machine "
          f"yardstick {yardstick():,.0f}; wall ms per run (fsyncs included), and the median "
          "as a share of the interval")  # fmt: skip
    print("| work | interval | " + " | ".join(f"{n:,} partitions" for n in counts) + " |")
    print("|---|---:|" + "---:|" * len(counts))
    for work, interval in INTERVALS.items():
        cells = " | ".join(
            f"{summary([t * 1000 for t in results[n][1][work]], '.2f')} ms "
            f"({100 * statistics.median(results[n][1][work]) / interval:.2f}%)"
            for n in counts
        )
        print(f"| {work} | {interval:g} s | {cells} |")
    for n in counts:
        print(f"- LeaderAndIsr making the broker leader of {n:,} partitions: {results[n][0]:.1f} s")


if __name__ == "__main__":
    main()
