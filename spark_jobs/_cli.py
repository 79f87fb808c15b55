"""What every job's command line shares: --bootstrap-server, --topic, --master."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from pyspark.sql import DataFrame

__all__ = ["base_parser", "format_table"]


def base_parser(description: str, *, topic_required: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--bootstrap-server",
        required=True,
        help="host:port[,host:port...] of minikafka brokers",
    )
    parser.add_argument("--topic", required=topic_required, help="the topic to analyse")
    parser.add_argument(
        "--master", default=None, help="Spark master URL (default local[*]; e.g. spark://h:7077)"
    )
    return parser


def format_table(title: str, df: DataFrame, limit: int = 1000) -> str:
    """A DataFrame as a fixed-width text table under ``title`` (Kafka tools' look)."""
    rows = df.limit(limit).collect()
    columns = df.columns
    cells = [[("" if v is None else str(v)) for v in row] for row in rows]
    return _table(title, columns, cells)


def _table(title: str, columns: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    widths = [len(c) for c in columns]
    for row in cells:
        widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]
    lines = [title, "  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines.extend("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells)
    return "\n".join(line.rstrip() for line in lines)
