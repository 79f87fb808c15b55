"""The Data RPC family: Produce, Fetch, ListOffsets, OffsetsForLeaderEpoch, InitProducerId.

A thin gRPC face on the ReplicaManager, which does the work and puts Kafka's error codes in the
responses. Runs on the broker's event loop (grpc.aio).
"""

from __future__ import annotations

from typing import Any

import grpc

from broker.replication.replica_manager import ReplicaManager
from proto import minikafka_pb2 as pb
from proto import minikafka_pb2_grpc as pb_grpc

__all__ = ["DataService"]

_Context = grpc.aio.ServicerContext[Any, Any]


class DataService(pb_grpc.DataServicer):
    """Records in and out, for clients and followers."""

    def __init__(self, replica_manager: ReplicaManager) -> None:
        self._replica_manager = replica_manager

    async def Produce(self, request: pb.ProduceRequest, context: _Context) -> pb.ProduceResponse:
        return await self._replica_manager.append_records(request)

    async def Fetch(self, request: pb.FetchRequest, context: _Context) -> pb.FetchResponse:
        return await self._replica_manager.fetch_messages(request)

    async def ListOffsets(
        self, request: pb.ListOffsetsRequest, context: _Context
    ) -> pb.ListOffsetsResponse:
        return await self._replica_manager.list_offsets(request)

    async def OffsetsForLeaderEpoch(
        self, request: pb.OffsetsForLeaderEpochRequest, context: _Context
    ) -> pb.OffsetsForLeaderEpochResponse:
        return await self._replica_manager.offsets_for_leader_epoch(request)

    async def InitProducerId(
        self, request: pb.InitProducerIdRequest, context: _Context
    ) -> pb.InitProducerIdResponse:
        return await self._replica_manager.init_producer_id(request)
