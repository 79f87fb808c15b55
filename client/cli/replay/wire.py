"""The replay's own requests, one RPC each, with nothing in between: a produce with the acks a
step names and the error the leader answers (a Producer would retry it away), a read up to the
high watermark as a consumer sees it, and the LeaderAndIsr a zombie controller would send.

    wire = Wire()
    answer = wire.produce("127.0.0.1:9092", "t", 0, [b"m1"], acks=-1)   # ProduceAnswer
    values = wire.read_committed("127.0.0.1:9092", "t", 0)              # [(offset, value)]
    wire.close()

Not thread-safe: one Wire belongs to the replay's thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.errors import ErrorCode
from minikafka.proto.records import decode_records, encode_batch

__all__ = ["ProduceAnswer", "Wire"]

UNREACHABLE = "UNREACHABLE"  # the broker did not answer (dead, paused)


@dataclass(frozen=True)
class ProduceAnswer:
    error: str  # Kafka's error name, NONE, or UNREACHABLE
    base_offset: int  # -1 unless NONE

    @property
    def ok(self) -> bool:
        return self.error == "NONE"


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


_MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # a scenario's records are a few bytes each


class Wire:
    """See the module docstring."""

    def __init__(self) -> None:
        self._channels: dict[str, grpc.Channel] = {}

    def _channel(self, address: str) -> grpc.Channel:
        channel = self._channels.get(address)
        if channel is None:
            channel = transport.channel(
                address,
                _MAX_MESSAGE_BYTES,
                options=[
                    ("grpc.initial_reconnect_backoff_ms", 100),
                    ("grpc.min_reconnect_backoff_ms", 100),
                    ("grpc.max_reconnect_backoff_ms", 500),
                ],
            )
            self._channels[address] = channel
        return channel

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()

    def produce(
        self,
        address: str,
        topic: str,
        partition: int,
        values: Sequence[bytes],
        *,
        acks: int,
        timeout_ms: int = 3000,
    ) -> ProduceAnswer:
        batch = encode_batch([(int(time.time() * 1000), None, v, ()) for v in values])
        request = pb.ProduceRequest(
            acks=acks,
            timeout_ms=timeout_ms,
            topic_data=[
                pb.ProduceRequest.TopicProduceData(
                    name=topic,
                    partition_data=[
                        pb.ProduceRequest.PartitionProduceData(index=partition, records=batch)
                    ],
                )
            ],
        )
        try:
            response = pb_grpc.DataStub(self._channel(address)).Produce(
                request, timeout=timeout_ms / 1000 + 2
            )
        except grpc.RpcError:
            return ProduceAnswer(UNREACHABLE, -1)
        answer = response.responses[0].partition_responses[0]
        error = _name(answer.error_code)
        return ProduceAnswer(error, answer.base_offset if error == "NONE" else -1)

    def read_committed(
        self, address: str, topic: str, partition: int, timeout_s: float = 5.0
    ) -> list[tuple[int, bytes | None]]:
        """What a consumer reads from the leader at ``address``: every record below its high
        watermark. Raises RuntimeError with the error name when the broker refuses."""
        records: list[tuple[int, bytes | None]] = []
        stub = pb_grpc.DataStub(self._channel(address))
        while True:
            offset = records[-1][0] + 1 if records else 0
            request = pb.FetchRequest(
                replica_id=-1,
                replica_epoch=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=8 * 1024 * 1024,
                topics=[
                    pb.FetchRequest.FetchTopic(
                        topic=topic,
                        partitions=[
                            pb.FetchRequest.FetchPartition(
                                partition=partition,
                                current_leader_epoch=-1,
                                fetch_offset=offset,
                                last_fetched_epoch=-1,
                                log_start_offset=-1,
                                partition_max_bytes=4 * 1024 * 1024,
                            )
                        ],
                    )
                ],
            )
            data = stub.Fetch(request, timeout=timeout_s).responses[0].partitions[0]
            if data.error_code != ErrorCode.NONE:
                raise RuntimeError(_name(data.error_code))
            batch = [
                (r.offset, r.value) for r in decode_records(data.records) if r.offset >= offset
            ]
            if not batch:
                return records
            records += batch

    def leader_and_isr(
        self,
        address: str,
        *,
        controller_id: int,
        controller_epoch: int,
        broker_epoch: int,
        topic: str,
        partition: int,
        leader: int,
        leader_epoch: int,
        isr: Sequence[int],
        replicas: Sequence[int],
    ) -> str:
        """Send one LeaderAndIsr, as a controller would; the error name of the answer."""
        request = pb.LeaderAndIsrRequest(
            controller_id=controller_id,
            controller_epoch=controller_epoch,
            broker_epoch=broker_epoch,
        )
        request.partition_states.add(
            topic_name=topic,
            partition_index=partition,
            controller_epoch=controller_epoch,
            leader=leader,
            leader_epoch=leader_epoch,
            isr=list(isr),
            partition_epoch=leader_epoch,
            replicas=list(replicas),
        )
        try:
            answer = pb_grpc.ControlStub(self._channel(address)).LeaderAndIsr(request, timeout=5)
        except grpc.RpcError as exc:
            return f"{UNREACHABLE}: {exc.code().name}"
        return _name(answer.error_code)
