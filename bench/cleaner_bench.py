"""Log cleaner throughput beside dd on the same disk, and the produce rate while it cleans.

    python -m bench.cleaner_bench [--dir DIR] [--mb 128] [--keys 10000] [--rounds 3]

Each round:

1. ``dd``: 1 MiB blocks to a file in ``--dir`` with ``conv=fdatasync`` (the cleaner fsyncs what
   it writes, so this is its yardstick), and without (page cache only).
2. A compacted log of ``--mb`` MiB in the same ``--dir``: batches of 100 records, 100-byte values,
   keys drawn at random from ``--keys``, 16 MiB segments, uncompressed.
3. One whole cleaning of it as the broker runs one: the map and the ``.cleaned`` segments in a
   worker thread (``LogCleaner.clean``), the swap on the calling thread. Throughput is the log's
   bytes (all of them are read twice: once for the map, once to rewrite) over the cleaning time.
4. The same again on a fresh log while the calling thread keeps appending 16 KB batches to the
   log's active segment, as the event loop does with produce requests, as fast as it can: the
   append rate is set beside the rate of the same appends with no cleaning running (the cleaner
   thread and the appends share one interpreter and its GIL).

Prints medians and ranges over the rounds, and the machine yardstick (kafka-python's encoder,
bench/codec_bench.py), so figures from different machines can be compared.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import shutil
import threading
import time
from pathlib import Path

from bench.codec_bench import yardstick
from bench.hygiene import scratch_dir
from bench.stats import summary
from bench.storage_bench import dd_mb_per_s, machine
from minikafka.broker.storage.cleaner import CleanerConfig, CleanResult, LogCleaner, plan_cleaning
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.proto.records import encode_batch

MiB = 1 << 20
RECORDS_PER_BATCH = 100
VALUE_SIZE = 100
T0 = 1_700_000_000_000


def build_log(directory: Path, mb: int, keys: int, seed: int) -> Log:
    shutil.rmtree(directory, ignore_errors=True)
    config = dataclasses.replace(
        LogConfig(), segment_bytes=16 * MiB, cleanup_policy=frozenset({"compact"})
    )
    log = Log(directory, config)
    rng = random.Random(seed)
    value = bytes(VALUE_SIZE)
    while log.size < mb * MiB:
        records = [
            (T0, b"key-%08d" % rng.randrange(keys), value, ()) for _ in range(RECORDS_PER_BATCH)
        ]
        log.append_as_leader(encode_batch(records), leader_epoch=0)
    log.roll()
    log.flush()
    return log


def produce_batch(keys: int) -> bytes:
    rng = random.Random(1)
    value = bytes(VALUE_SIZE)
    return encode_batch(
        [(T0, b"key-%08d" % rng.randrange(keys), value, ()) for _ in range(RECORDS_PER_BATCH)]
    )


def append_for(log: Log, data: bytes, seconds: float) -> float:
    """Records/s of appending ``data`` over and over for ``seconds``."""
    count = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        log.append_as_leader(data, leader_epoch=0)
        count += RECORDS_PER_BATCH
    return count / (time.perf_counter() - start)


def clean_once(base: Path, mb: int, keys: int, seed: int, *, appends: bool) -> dict[str, float]:
    """Build a log and clean it, appending to it meanwhile when ``appends``."""
    log = build_log(base / "compacted-0", mb, keys, seed)
    size_before = log.size
    data = produce_batch(keys)
    cleaner = LogCleaner(CleanerConfig())
    plan, _ = plan_cleaning(log, first_dirty_offset=0, now_ms=time.time_ns() // 1_000_000)
    assert plan is not None
    results: list[CleanResult] = []
    worker = threading.Thread(target=lambda: results.append(cleaner.clean(plan)))
    appended = 0
    start = time.perf_counter()
    worker.start()
    while appends and worker.is_alive():  # appends to the active segment meanwhile
        log.append_as_leader(data, leader_epoch=0)
        appended += RECORDS_PER_BATCH
    worker.join()
    cleaning_s = time.perf_counter() - start
    swap_start = time.perf_counter()
    assert cleaner.swap(log, results[0])
    swap_s = time.perf_counter() - swap_start
    row = {
        "cleaner_mb_s": size_before / (cleaning_s + swap_s) / 1e6,
        "swap_ms": swap_s * 1000,
        "before_mb": size_before / 1e6,
        "after_mb": sum(g.size for g in results[0].groups) / 1e6,
    }
    if appends:
        row["produce_during"] = appended / cleaning_s
        row["produce_alone"] = append_for(log, data, min(cleaning_s, 5.0))
    log.close()
    return row


def clean_round(base: Path, mb: int, keys: int, seed: int) -> dict[str, float]:
    alone = clean_once(base, mb, keys, seed, appends=False)
    busy = clean_once(base, mb, keys, seed, appends=True)
    return alone | {
        "cleaner_busy_mb_s": busy["cleaner_mb_s"],
        "produce_during": busy["produce_during"],
        "produce_alone": busy["produce_alone"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="directory on the disk to test")
    parser.add_argument("--mb", type=int, default=128, help="MiB of log to clean per round")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    speed = yardstick()
    with scratch_dir("cleaner-bench-", args.dir) as base:
        rounds = []
        for n in range(args.rounds):
            dd_sync = dd_mb_per_s(base, args.mb, fdatasync=True)
            dd_cache = dd_mb_per_s(base, args.mb, fdatasync=False)
            row = clean_round(base, args.mb, args.keys, seed=n)
            row |= {"dd_sync": dd_sync, "dd_cache": dd_cache}
            rounds.append(row)

        def col(name: str) -> list[float]:
            return [r[name] for r in rounds]

        print(
            f"machine: {machine()}; dir: {base}; {args.mb} MiB log, {args.keys:,} keys, "
            f"{args.rounds} rounds; machine yardstick: kafka-python encodes {speed:,.0f} "
            "records/s"
        )
        print()
        print("| measure: median (range) | value |")
        print("|---|---:|")
        print(f"| dd to disk (conv=fdatasync), MB/s | {summary(col('dd_sync'))} |")
        print(f"| dd to page cache, MB/s | {summary(col('dd_cache'))} |")
        print(f"| cleaner, MB/s of log cleaned | {summary(col('cleaner_mb_s'), ',.1f')} |")
        ratios = [r["cleaner_mb_s"] / r["dd_sync"] for r in rounds]
        print(f"| cleaner / dd to disk | {summary(ratios, '.3f')} |")
        print(
            f"| log before / after cleaning, MB | {summary(col('before_mb'), ',.1f')} / "
            f"{summary(col('after_mb'), ',.1f')} |"
        )
        print(f"| swap on the owner's thread, ms | {summary(col('swap_ms'), ',.1f')} |")
        busy = col("cleaner_busy_mb_s")
        print(f"| cleaner while appends run, MB/s | {summary(busy, ',.1f')} |")
        print(f"| appends alone, records/s | {summary(col('produce_alone'))} |")
        print(f"| appends while cleaning, records/s | {summary(col('produce_during'))} |")
        shares = [r["produce_during"] / r["produce_alone"] for r in rounds]
        print(f"| appends while cleaning / alone | {summary(shares, '.2f')} |")


if __name__ == "__main__":
    main()
