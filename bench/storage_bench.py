"""Storage throughput beside the disk's own sequential write bandwidth, in one run.

    python -m bench.storage_bench [--dir DIR] [--mb 512] [--rounds 3]

1. ``dd``: sequential writes of 1 MiB blocks to a file in ``--dir``, once to the page cache only
   and once with ``conv=fdatasync`` (the data forced to the disk before dd reports).
2. ``Log.append_as_leader`` of pre-built 16 KB batches (150 records of 100 bytes each) into a
   partition directory in the same ``--dir``: the same two figures. For the first, the run stops
   when the last append returns. For the second, it also includes the final ``Log.flush()``.
3. ``Log.read`` of the whole log from offset 0 in 1 MiB fetches. This is what a follower or a
   consumer fetch costs the broker.

Each figure is the median of ``--rounds`` runs with their range (bench/stats.py).
The ratio of append to dd is the target in issue 2 (at least 0.5).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench.codec_bench import yardstick
from bench.stats import summary
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.proto.records import encode_batch, iter_batch_headers

MiB = 1 << 20
RECORDS_PER_BATCH = 150
VALUE_SIZE = 100


def dd_mb_per_s(directory: Path, mb: int, *, fdatasync: bool) -> float:
    target = directory / "dd.out"
    args = ["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={mb}"]
    if fdatasync:
        args.append("conv=fdatasync")
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    elapsed = time.perf_counter() - start
    target.unlink()
    return mb * MiB / elapsed / 1e6


def build_batches(total_bytes: int) -> list[bytes]:
    value = os.urandom(VALUE_SIZE)
    base_ts = 1_700_000_000_000
    one = encode_batch([(base_ts + i, None, value, ()) for i in range(RECORDS_PER_BATCH)])
    # Identical batches are fine: the log validates and patches each one separately.
    return [one] * (total_bytes // len(one))


def append_run(
    directory: Path, batches: list[bytes], *, flush: bool, per_call: int = 1
) -> tuple[float, float]:
    """(MB/s, records/s) of appending every batch, ``per_call`` batches per append (as one
    produce request carries them), then flushing when ``flush``."""
    part = directory / "bench-0"
    shutil.rmtree(part, ignore_errors=True)
    log = Log(part, LogConfig())
    total = sum(len(b) for b in batches)
    calls = [b"".join(batches[i : i + per_call]) for i in range(0, len(batches), per_call)]
    start = time.perf_counter()
    for data in calls:
        log.append_as_leader(data, leader_epoch=0)
    if flush:
        log.flush()
    elapsed = time.perf_counter() - start
    log.close()
    return total / elapsed / 1e6, len(batches) * RECORDS_PER_BATCH / elapsed


def read_run(directory: Path) -> float:
    """MB/s of reading the log written by the last append run, 1 MiB per read."""
    log = Log(directory / "bench-0", LogConfig(), had_clean_shutdown=True)
    offset, total = 0, 0
    start = time.perf_counter()
    while offset < log.log_end_offset:
        data = log.read(offset, MiB).records
        total += len(data)
        *_, (_, last) = iter_batch_headers(data)
        offset = last.next_offset
    elapsed = time.perf_counter() - start
    log.close()
    return total / elapsed / 1e6


def machine() -> str:
    cpu = "unknown cpu"
    try:
        text = Path("/proc/cpuinfo").read_text()
        found = re.search(r"model name\s*:\s*(.+)", text)
        if found:
            cpu = found.group(1).strip()
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="directory on the disk to test")
    parser.add_argument("--mb", type=int, default=512, help="MiB written per run")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="storage-bench-", dir=args.dir))
    try:
        batches = build_batches(args.mb * MiB)
        rows = []
        dd_cache = [dd_mb_per_s(base, args.mb, fdatasync=False) for _ in range(args.rounds)]
        dd_sync = [dd_mb_per_s(base, args.mb, fdatasync=True) for _ in range(args.rounds)]
        group = MiB // len(batches[0])
        for per_call in (1, group):
            for where, dd, flush in (("page cache", dd_cache, False), ("to disk", dd_sync, True)):
                runs = [
                    append_run(base, batches, flush=flush, per_call=per_call)
                    for _ in range(args.rounds)
                ]
                name = f"{where}, {per_call} batch(es) per append"
                rows.append((name, dd, [mbps for mbps, _ in runs], [rps for _, rps in runs]))
        read = [read_run(base) for _ in range(args.rounds)]
        print(
            f"machine: {machine()}; yardstick: {yardstick():,.0f}; dir: {base}; "
            f"{args.mb} MiB per run; median (range) of {args.rounds} rounds"
        )
        print(f"batch: {RECORDS_PER_BATCH} records x {VALUE_SIZE} B = {len(batches[0])} bytes")
        print()
        print("dd: 1 MiB blocks; 'to disk' is dd conv=fdatasync and Log append + Log.flush()")
        print("| write | dd MB/s | Log append MB/s | records/s | ratio of medians to dd |")
        print("|---|---:|---:|---:|---:|")
        for name, dd, mbps, rps in rows:
            ratio = statistics.median(mbps) / statistics.median(dd)
            print(f"| {name} | {summary(dd)} | {summary(mbps)} | {summary(rps)} | {ratio:.2f} |")
        print()
        print(f"Log.read, 1 MiB fetches from offset 0: {summary(read)} MB/s")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
