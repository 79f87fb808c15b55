"""How the transaction coordinator's markers reach the partition leaders (Kafka's
TransactionMarkerChannelManager, its network half): each marker's partitions are grouped by
their leader as this broker's metadata names it; partitions it leads itself are written
locally, the others go in one Control.WriteTxnMarkers call per leader, over gRPC on the control
plane listener that every broker serves inter-broker requests on (with the broker's TLS and
SASL login). The coordinator decides what to retry; this channel only reports:

* a partition this broker's metadata does not know: UNKNOWN_TOPIC_OR_PARTITION (its topic was
  deleted since the partition joined the transaction);
* no leader, a leader without an endpoint, a failed call: NOT_LEADER_OR_FOLLOWER, which the
  coordinator retries after a back-off against the metadata of then.

One channel per leader address is kept open and closed with the broker.

Runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Protocol

import grpc
import structlog

from minikafka.broker.replication.requests import TxnMarker, by_topic
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode
from minikafka.proto.sasl_channel import SaslCredentials, aio_sasl_channel

__all__ = ["MarkerRequest", "TxnMarkerChannel"]

_log = structlog.get_logger(__name__)

LocalWriter = Callable[[Sequence[TxnMarker]], Awaitable[list[dict[TopicPartition, int]]]]


class MarkerRequest(Protocol):
    """One marker as the coordinator asks for it (broker/transaction's MarkerEntry)."""

    @property
    def producer_id(self) -> int: ...

    @property
    def producer_epoch(self) -> int: ...

    @property
    def coordinator_epoch(self) -> int: ...

    @property
    def committed(self) -> bool: ...

    @property
    def partitions(self) -> Iterable[TopicPartition]: ...


class TxnMarkerChannel:
    """See the module docstring."""

    def __init__(
        self,
        broker_id: int,
        metadata_cache: MetadataCache,
        write_locally: LocalWriter,
        *,
        listener: str,
        max_message_bytes: int,
        timeout_s: float,
        credentials: grpc.ChannelCredentials | None = None,
        sasl: SaslCredentials | None = None,
    ) -> None:
        self._broker_id = broker_id
        self._cache = metadata_cache
        self._write_locally = write_locally
        self._listener = listener
        self._max_message_bytes = max_message_bytes
        self._timeout_s = timeout_s
        self._credentials = credentials
        self._sasl = sasl
        self._channels: dict[str, grpc.aio.Channel] = {}

    async def write_markers(
        self, entries: Sequence[MarkerRequest]
    ) -> dict[tuple[int, TopicPartition], int]:
        """Each (producer id, partition)'s outcome."""
        results: dict[tuple[int, TopicPartition], int] = {}
        by_leader: dict[int, list[TxnMarker]] = {}
        for entry in entries:
            leaders: dict[int, list[TopicPartition]] = {}
            for tp in entry.partitions:
                info = self._cache.get_partition(tp.topic, tp.partition)
                if info is None:
                    results[(entry.producer_id, tp)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif info.leader < 0:
                    results[(entry.producer_id, tp)] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    leaders.setdefault(info.leader, []).append(tp)
            for leader, partitions in leaders.items():
                by_leader.setdefault(leader, []).append(
                    TxnMarker(
                        entry.producer_id,
                        entry.producer_epoch,
                        entry.coordinator_epoch,
                        entry.committed,
                        partitions,
                    )
                )
        answers = await asyncio.gather(
            *(self._send(leader, markers) for leader, markers in by_leader.items())
        )
        for (_, markers), answer in zip(by_leader.items(), answers, strict=True):
            for marker, errors in zip(markers, answer, strict=True):
                for tp, code in errors.items():
                    results[(marker.producer_id, tp)] = code
        return results

    async def _send(self, leader: int, markers: list[TxnMarker]) -> list[dict[TopicPartition, int]]:
        if leader == self._broker_id:
            return await self._write_locally(markers)
        unreachable = [
            dict.fromkeys(m.partitions, int(ErrorCode.NOT_LEADER_OR_FOLLOWER)) for m in markers
        ]
        endpoint = self._cache.get_alive_broker_endpoint(leader, self._listener)
        if endpoint is None:
            return unreachable
        request = pb.WriteTxnMarkersRequest(
            markers=[
                pb.WriteTxnMarkersRequest.WritableTxnMarker(
                    producer_id=m.producer_id,
                    producer_epoch=m.producer_epoch,
                    transaction_result=m.committed,
                    coordinator_epoch=m.coordinator_epoch,
                    topics=[
                        pb.WriteTxnMarkersRequest.WritableTxnMarkerTopic(
                            name=topic, partition_indexes=[tp.partition for tp in tps]
                        )
                        for topic, tps in by_topic(m.partitions).items()
                    ],
                )
                for m in markers
            ]
        )
        address = f"{endpoint[0]}:{endpoint[1]}"
        try:
            response = await pb_grpc.ControlStub(self._channel(address)).WriteTxnMarkers(
                request, timeout=self._timeout_s
            )
        except grpc.aio.AioRpcError as exc:
            _log.info(
                "txn_markers.send_failed", leader=leader, address=address, error=exc.code().name
            )
            return unreachable
        answers: list[dict[TopicPartition, int]] = []
        for marker, answer in zip(markers, response.markers, strict=False):
            errors = dict.fromkeys(marker.partitions, int(ErrorCode.NOT_LEADER_OR_FOLLOWER))
            for topic in answer.topics:
                for p in topic.partitions:
                    errors[TopicPartition(topic.name, p.partition_index)] = p.error_code
            answers.append(errors)
        return answers + unreachable[len(answers) :]

    def _channel(self, address: str) -> grpc.aio.Channel:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = (
                transport.aio_channel(
                    address, self._max_message_bytes, credentials=self._credentials
                )
                if self._sasl is None
                else aio_sasl_channel(
                    address, self._max_message_bytes, self._sasl, (), self._credentials
                )
            )
        return channel

    async def close(self) -> None:
        channels, self._channels = self._channels, {}
        for channel in channels.values():
            await channel.close()
