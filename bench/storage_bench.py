"""Storage throughput beside the disk's own sequential write bandwidth, in one run.

    python -m bench.storage_bench [--dir DIR] [--mb 512] [--rounds 3]
    python -m bench.storage_bench --load-logs 10000 [--load-batches 0] [--profile] [--dir DIR]
    python -m bench.storage_bench --page-cache-gb 4 [--dir DIR]

1. ``dd``: sequential writes of 1 MiB blocks to a file in ``--dir``, once to the page cache only
   and once with ``conv=fdatasync`` (the data forced to the disk before dd reports).
2. ``Log.append_as_leader`` of pre-built 16 KB batches (150 records of 100 bytes each) into a
   partition directory in the same ``--dir``: the same two figures. For the first, the run stops
   when the last append returns. For the second, it also includes the final ``Log.flush()``.
3. ``Log.read`` of the whole log from offset 0 in 1 MiB fetches. This is what a follower or a
   consumer fetch costs the broker.

Each figure is the median of ``--rounds`` runs with their range (bench/stats.py).
The ratio of append to dd is the target in issue 2 (at least 0.5).

``--load-logs N`` measures something else instead: a broker restart's loading of N logs
(issue 18), ``LogManager`` opening one log dir of N partition directories (topics of 1000
partitions, as partitions_bench's), each with ``--load-batches`` batches of 10 records (0: the
idle partitions of partitions_bench's restart) and a leader epoch in its
``leader-epoch-checkpoint`` for every third (the partitions this broker led). Two cases: after a
clean close (``.kafka_cleanshutdown``: nothing recovered) and after a crash (no marker, the
recovery points checkpointed: what partitions_bench's SIGKILL leaves). Logging as the broker's
(``configure_logging``, JSON, to /dev/null). ``--profile`` prints cProfile's top functions of
one more load of each case.

``--page-cache-gb G`` measures the page cache alone: G GB written to one new file in 256 MB
steps, each step's MB per CPU-second and wall MB/s, and the Dirty memory after it. Every
replica's append is such a write (the kernel's copy into the page cache); on this project's
virtual machines it costs over ten times more CPU once a few GB of new page cache are in use.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from bench.codec_bench import yardstick
from bench.hygiene import scratch_dir
from bench.stats import summary
from minikafka.broker.server.logging import configure_logging
from minikafka.broker.storage.config import LogConfig
from minikafka.broker.storage.log import Log
from minikafka.broker.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
from minikafka.proto.common import TopicPartition
from minikafka.proto.records import encode_batch, iter_batch_headers
from tests.unit.storage.helpers import memory_records

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


def page_cache_write_rate(directory: Path, megabytes: int = 512) -> float:
    """MB of new file written per CPU-second (1 MiB writes into the page cache, no fsync), in
    ``directory``; the file is removed. An RF3 run appends each byte three times, and on this
    machine's virtual machines the same write costs over ten times more CPU once a few GB of
    new page cache are in use (``--page-cache-gb``; docs/benchmarks.md, "Large records and
    latency at RF3 acks=all")."""
    path = directory / "page-cache-write-rate"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        used, _ = _timed_writes(fd, megabytes)
    finally:
        os.close(fd)
        path.unlink()
    return megabytes * MiB / 1e6 / max(used, 1e-9)


def _timed_writes(fd: int, mebibytes: int) -> tuple[float, float]:
    """Append ``mebibytes`` MiB to ``fd`` in 1 MiB writes; the CPU and wall seconds taken."""
    chunk = b"x" * MiB
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(mebibytes):
        os.write(fd, chunk)
    return time.process_time() - cpu, time.perf_counter() - wall


def page_cache_curve(directory: Path, gigabytes: float, step_mb: int = 256) -> None:
    """Write ``gigabytes`` to one new file in ``directory`` in ``step_mb`` steps (1 MiB writes,
    no fsync) and print each step's MB per CPU-second, wall MB/s and the Dirty memory; the
    file is removed."""
    path = directory / "page-cache-curve"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    print(f"machine: {machine()}; {gigabytes} GB to one new file in {directory}")
    print("| written, MB | MB per CPU-second | wall MB/s | Dirty, MB |")
    print("|---:|---:|---:|---:|")
    try:
        for step in range(1, int(gigabytes * 1000 / step_mb) + 1):
            cpu, wall = _timed_writes(fd, step_mb)
            mb = step_mb * MiB / 1e6
            print(f"| {step * mb:,.0f} | {mb / max(cpu, 1e-9):,.0f} | {mb / max(wall, 1e-9):,.0f} "
                  f"| {_meminfo_mb('Dirty'):,} |", flush=True)  # fmt: skip
    finally:
        os.close(fd)
        path.unlink()


def _meminfo_mb(field: str) -> int:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            name, _, value = line.partition(":")
            if name == field:
                return int(value.split()[0]) // 1024
    return -1


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
        data = memory_records(log.read(offset, MiB).records)
        total += len(data)
        *_, (_, last) = iter_batch_headers(data)
        offset = last.next_offset
    elapsed = time.perf_counter() - start
    log.close()
    return total / elapsed / 1e6


LOAD_TOPIC_PARTITIONS = 1000


def build_log_dir(log_dir: Path, logs: int, batches: int) -> None:
    """``logs`` partition directories in ``log_dir``, closed cleanly."""
    manager = LogManager([log_dir], LogConfig(), broker_id=1)
    partitions = [
        TopicPartition(f"scale-{n // LOAD_TOPIC_PARTITIONS}", n % LOAD_TOPIC_PARTITIONS)
        for n in range(logs)
    ]
    manager.sync_log_dirs(manager.create_logs(partitions, {}))
    data = encode_batch([(1_700_000_000_000 + i, None, b"v" * 100, ()) for i in range(10)])
    for n, tp in enumerate(partitions):
        log = manager.get_log(tp.topic, tp.partition)
        assert log is not None
        if n % 3 == 0:
            log.maybe_assign_epoch_start_offset(1, 0)
        for _ in range(batches):
            log.append_as_leader(data, leader_epoch=1)
    manager.close()


def load_seconds(log_dir: Path, *, clean: bool) -> float:
    """Seconds to open the LogManager of ``log_dir`` (closed cleanly before, by the caller or
    the previous round): with the clean-shutdown marker, or without it (a crash)."""
    if not clean:
        (log_dir / CLEAN_SHUTDOWN_FILE).unlink()
    start = time.perf_counter()
    manager = LogManager([log_dir], LogConfig(), broker_id=1)
    elapsed = time.perf_counter() - start
    manager.close()
    return elapsed


def profile_load(log_dir: Path, *, clean: bool) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    load_seconds(log_dir, clean=clean)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def load_main(args: argparse.Namespace) -> None:
    with (
        scratch_dir("storage-bench-load-", args.dir) as base,
        open(os.devnull, "w") as devnull,
    ):
        configure_logging(broker_id=1, stream=devnull, environ={"KAFKA_LOG_FORMAT": "json"})
        _load_cases(args, base)


def _load_cases(args: argparse.Namespace, base: Path) -> None:
    log_dir = base / "kafka-logs"
    build_log_dir(log_dir, args.load_logs, args.load_batches)
    load_seconds(log_dir, clean=True)  # warms the page cache and the code
    cases = {"clean shutdown": True, "after a crash": False}
    runs: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):  # the cases take turns
        for name, clean in cases.items():
            runs[name].append(load_seconds(log_dir, clean=clean))
    if args.profile:
        for name, clean in cases.items():
            print(f"--- cProfile: {name}")
            profile_load(log_dir, clean=clean)
    print(
        f"machine: {machine()}; yardstick: {yardstick():,.0f}; dir: {base}; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"median (range) of {args.rounds} rounds"
    )
    print(f"LogManager load of {args.load_logs:,} logs, {args.load_batches} batches each")
    print("| case | seconds | ms per log |")
    print("|---|---:|---:|")
    for name, seconds in runs.items():
        per_log = [s * 1000 / args.load_logs for s in seconds]
        print(f"| {name} | {summary(seconds, '.2f')} | {summary(per_log, '.3f')} |")


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
    parser.add_argument("--load-logs", type=int, default=0, help="measure loading N logs instead")
    parser.add_argument("--load-batches", type=int, default=0, help="batches per loaded log")
    parser.add_argument("--profile", action="store_true", help="cProfile one load of each case")
    parser.add_argument(
        "--page-cache-gb", type=float, default=0, help="the page cache's cost as it fills instead"
    )
    args = parser.parse_args()
    if args.load_logs:
        load_main(args)
        return
    if args.page_cache_gb:
        with scratch_dir("storage-bench-", args.dir) as base:
            page_cache_curve(base, args.page_cache_gb)
        return
    with scratch_dir("storage-bench-", args.dir) as base:
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


if __name__ == "__main__":
    main()
