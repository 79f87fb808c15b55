"""Per-log configuration: a log's config is its topic's, ``proto.topic_config.TopicConfig``.

Storage reads the log fields of it (segment_bytes, segment_ms, segment_index_bytes,
index_interval_bytes, retention_ms/bytes, flush_messages/ms, max_message_bytes, cleanup_policy,
the cleaner's delete_retention_ms, min/max_compaction_lag_ms, min_cleanable_dirty_ratio); the
keys, their broker synonyms, types, ranges and defaults are the rows of that module's one table
of topic keys, which the replicas, the controller and the admin core read as well.

A topic's config is its overrides laid over the broker's: ``LogConfig.from_properties(topic_props,
base=broker_config.log)``. Immutable; safe from any thread.
"""

from __future__ import annotations

from minikafka.proto.topic_config import LONG_MAX, TopicConfig

__all__ = ["LONG_MAX", "LogConfig"]

# The storage's name for it, as Kafka's LogConfig is the topic config a log is given.
LogConfig = TopicConfig
