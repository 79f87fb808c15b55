"""Topic ids between ZooKeeper's text form and the wire's UUID.

Kafka writes a topic id as the URL-safe base64 of its 16 bytes, without padding
(``Uuid.toString``); the wire carries the 16 bytes.
"""

from __future__ import annotations

import base64
import binascii
import uuid

ZERO = uuid.UUID(int=0)


def to_uuid(topic_id: str | None) -> uuid.UUID:
    if not topic_id:
        return ZERO
    try:
        raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    except (binascii.Error, ValueError):
        return ZERO
    return uuid.UUID(bytes=raw) if len(raw) == 16 else ZERO


def from_uuid(value: uuid.UUID | None) -> str:
    if value is None or value == ZERO:
        return ""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
