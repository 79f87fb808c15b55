"""ZooKeeper's multiRead request (opcode 22, ZooKeeper 3.6+), which kazoo does not offer.

Many getData reads in one request, each answered on its own (unlike a multi-op of writes, a
read that fails fails alone). Kazoo's per-request cost (a Python object queued, a wake-up of
its connection thread, a response parsed and an event set, on a thread sharing the GIL with
the broker) is what reading thousands of partition states costs; one request for hundreds of
znodes pays it once::

    result = multi_read_async(client, ["/brokers/topics/t/partitions/0/state", ...])
    for answer in result.get():     # per path: (data, ZnodeStat) or a KazooException
        ...

Wire layout (jute, big-endian), as ZooKeeper's MultiOperationRecord and MultiResponse:

    request   per path:  MultiHeader(type int32 = 4 getData, done bool = false, err int32 = -1)
                         path ustring (int32 length + UTF-8), watch bool = false
              then:      MultiHeader(type -1, done true, err -1)
    response  per path:  MultiHeader(type int32, done bool, err int32), then
                         type 4 (getData): data buffer (int32 length, -1 for null), Stat (68 bytes)
                         type -1 (error):  err int32 (a ZooKeeper error code)
              then:      MultiHeader(type -1, done true, err -1)

A server older than 3.6 refuses the request (UnimplementedError): callers fall back to one
getData per path. The request goes through kazoo's own queue (``KazooClient._call``, as its
transactions do), so it is retried, ordered and failed with the session like any other.

Thread-safety: as KazooClient's calls, from any thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import (
    GetData,
    MultiHeader,
    int_struct,
    read_buffer,
    stat_struct,
)
from kazoo.protocol.states import ZnodeStat

__all__ = ["MULTI_READ", "multi_read_async"]

MULTI_READ = 22  # ZooDefs.OpCode.multiRead
_ERROR = -1


class _MultiRead:
    """A kazoo request: ``type``, ``serialize()`` and ``deserialize()`` are what its
    connection calls."""

    type: ClassVar[int] = MULTI_READ

    def __init__(self, paths: tuple[str, ...]) -> None:
        self.paths = paths

    def __repr__(self) -> str:
        return f"MultiRead({len(self.paths)} paths)"

    def serialize(self) -> bytearray:
        b = bytearray()
        for path in self.paths:
            b.extend(MultiHeader(GetData.type, False, -1).serialize())
            b.extend(GetData(path, None).serialize())
        b.extend(MultiHeader(-1, True, -1).serialize())
        return b

    @classmethod
    def deserialize(cls, data: bytes, offset: int) -> list[Any]:
        results: list[Any] = []
        header, offset = MultiHeader.deserialize(data, offset)
        while not header.done:
            if header.type == GetData.type:
                value, offset = read_buffer(data, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(data, offset))
                offset += stat_struct.size
                results.append((value, stat))
            elif header.type == _ERROR:
                code = int_struct.unpack_from(data, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[code]())
            else:
                raise ValueError(f"unexpected result type {header.type} in a multiRead answer")
            header, offset = MultiHeader.deserialize(data, offset)
        return results


def multi_read_async(client: KazooClient, paths: Sequence[str]) -> Any:
    """Send one multiRead of ``paths`` (chroot-relative, as kazoo's own calls take them);
    kazoo's async result gives, per path in order, ``(data, stat)`` or the exception."""
    chroot = client.chroot
    request = _MultiRead(tuple(chroot + path if chroot else path for path in paths))
    async_object = client.handler.async_result()
    client._call(request, async_object)
    return async_object
