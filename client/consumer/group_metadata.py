"""``ConsumerGroupMetadata``: what a transactional producer needs of a consumer's group membership.

    producer.send_offsets_to_transaction(offsets, consumer.group_metadata())

Kafka's ConsumerGroupMetadata (KIP-447): with the generation and member id, the group
coordinator refuses a TxnOffsetCommit from a member that has lost its partitions in a
rebalance (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), so a zombie consumer's
transaction cannot commit offsets the group's new owner commits too. A plain group id (no
generation: -1, no member: "") commits as Kafka's producers before 2.5 did.

Immutable; safe from any thread.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ConsumerGroupMetadata"]


class ConsumerGroupMetadata(NamedTuple):
    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
