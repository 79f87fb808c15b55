"""Work the broker does on a timer, in time proportional to what changed (issue 18): an idle
broker with thousands of partitions must not rewrite and fsync their state every interval."""

from __future__ import annotations

from pathlib import Path

from minikafka.broker.storage.checkpoints import REPLICATION_OFFSET_CHECKPOINT
from minikafka.proto.errors import ErrorCode
from tests.unit.replication.harness import Cluster, produce, run


def _checkpoint(node_dir: Path) -> tuple[int, str]:
    """The file's inode (a write replaces it: temp file, fsync, rename) and its text."""
    path = node_dir / REPLICATION_OFFSET_CHECKPOINT
    return path.stat().st_ino, path.read_text()


def test_high_watermark_checkpoint_is_written_only_when_a_high_watermark_moved(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        cluster = Cluster(tmp_path, broker_ids=(1,))
        await cluster.start()
        try:
            for partition in range(3):
                await cluster.elect(1, 1, [1], [1], partition=partition)
            node = cluster[1]
            rm = node.replica_manager
            await rm.checkpoint_high_watermarks()
            first = _checkpoint(node.log_dir)
            assert sorted(first[1].splitlines()[2:]) == ["t 0 0", "t 1 0", "t 2 0"]

            # Nothing moved: no write, the same file.
            await rm.checkpoint_high_watermarks()
            await rm.checkpoint_high_watermarks()
            assert _checkpoint(node.log_dir) == first

            # One HW moves: the next checkpoint writes it.
            assert (await produce(node, b"a", b"b", acks=1)).error_code == ErrorCode.NONE
            assert node.high_watermark() == 2
            await rm.checkpoint_high_watermarks()
            moved = _checkpoint(node.log_dir)
            assert moved[0] != first[0]
            assert "t 0 2" in moved[1].splitlines()
            await rm.checkpoint_high_watermarks()
            assert _checkpoint(node.log_dir) == moved

            # A partition that comes is a change too.
            await cluster.elect(1, 1, [1], [1], partition=3)
            await rm.checkpoint_high_watermarks()
            assert "t 3 0" in _checkpoint(node.log_dir)[1].splitlines()
        finally:
            await cluster.stop()

    run(scenario)
