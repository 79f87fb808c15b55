"""``minikafka broker``: run one broker until SIGTERM or SIGINT, as kafka-server-start.sh.

    minikafka broker --config server.properties [--override key=value ...]

Settings come from the file, then ``KAFKA_*`` environment variables, then the overrides (see
broker.config). Exit status: 0 after a shutdown on a signal; 1 when the configuration is invalid
or startup fails (for instance ``broker.id 1 is already registered in ZooKeeper``), with a
one-line message on stderr besides the log.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="server.properties",
        help="the broker's properties file (optional when KAFKA_* variables set everything)",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a property, beating the file and the environment (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    # Imported here: `minikafka --help` and the client tools must not load the broker.
    from minikafka.broker.config import BrokerConfig
    from minikafka.broker.server.broker_server import BrokerStartupError, run_broker
    from minikafka.broker.server.logging import configure_logging
    from minikafka.proto.errors import KafkaError

    configure_logging()
    try:
        config = BrokerConfig.load(args.config, overrides=args.override)
    except (KafkaError, OSError) as exc:
        message = exc.message if isinstance(exc, KafkaError) else str(exc)
        print(f"error: invalid broker configuration: {message}", file=sys.stderr)
        return 1
    configure_logging(broker_id=config.broker_id)
    try:
        return run_broker(config)
    except BrokerStartupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
