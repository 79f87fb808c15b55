"""PySpark's Python daemon (``pyspark.daemon``) with workers that ignore SIGINT, for the jobs'
sessions in local mode (``spark.python.daemon.module``, set by ``spark_jobs.session``).

A terminal's Ctrl-C goes to its whole foreground process group: the job's driver, the JVM, and
the PySpark daemon with the workers it forks. The driver stops the query cleanly on it
(``_cli.run_job``), but pyspark.daemon's ``worker`` puts Python's default SIGINT handler back in
each forked worker (for debugging, it says), so every worker busy with a task at that moment
died with a KeyboardInterrupt traceback on the job's stderr. Here the daemon keeps SIGINT
ignored, in itself and so in every worker it forks (an ignored signal stays ignored across
fork); the workers end as they do at any other stop, when the driver stops the session.

    python -m minikafka.spark._quiet_daemon pyspark.worker    # as the JVM starts pyspark.daemon
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

_set_handler = signal.signal


def _keep_sigint_ignored(signum: int, handler: Callable[..., Any] | int | None) -> Any:
    """``signal.signal`` for pyspark.daemon: any handler for SIGINT becomes SIG_IGN."""
    if signum == signal.SIGINT:
        handler = signal.SIG_IGN
    return _set_handler(signum, handler)


def main() -> None:
    _set_handler(signal.SIGINT, signal.SIG_IGN)
    signal.signal = _keep_sigint_ignored  # type: ignore[assignment]
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
