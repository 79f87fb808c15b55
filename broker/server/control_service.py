"""The Control RPC family: LeaderAndIsr, UpdateMetadata, StopReplica (controller -> broker) and
ControlledShutdown (broker -> controller).

Fencing (controller_epoch, broker_epoch) is the ReplicaManager's: the three controller requests
share its newest-seen controller epoch, as in Kafka. ControlledShutdown is handed to the
controller object running in this process (its ``controlled_shutdown`` returns a
``concurrent.futures.Future``, awaited here without blocking the loop); a broker that runs no
controller answers NOT_CONTROLLER.

Runs on the broker's event loop (grpc.aio).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Sequence
from typing import Any, Protocol

import grpc
import structlog

from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.errors import ErrorCode

__all__ = ["ControlService", "ShutdownController"]

_Context = grpc.aio.ServicerContext[Any, Any]

_log = structlog.get_logger(__name__)


class ControlledShutdownOutcome(Protocol):
    @property
    def error(self) -> int: ...

    @property
    def remaining(self) -> Sequence[tuple[str, int]]: ...


class ShutdownController(Protocol):
    """What ControlledShutdown needs of the KafkaController."""

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> concurrent.futures.Future[Any]: ...


class ControlService(pb_grpc.ControlServicer):
    """Requests from the controller, and ControlledShutdown to it."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        metadata_cache: MetadataCache,
        controller: ShutdownController | None = None,
    ) -> None:
        self._replica_manager = replica_manager
        self._metadata_cache = metadata_cache
        self._controller = controller

    async def LeaderAndIsr(
        self, request: pb.LeaderAndIsrRequest, context: _Context
    ) -> pb.LeaderAndIsrResponse:
        return await self._replica_manager.become_leader_or_follower(request)

    async def UpdateMetadata(
        self, request: pb.UpdateMetadataRequest, context: _Context
    ) -> pb.UpdateMetadataResponse:
        code = self._replica_manager.check_controller_request(
            request.controller_epoch, request.broker_epoch
        )
        if code == ErrorCode.NONE:
            self._metadata_cache.update(request)
        return pb.UpdateMetadataResponse(error_code=code)

    async def StopReplica(
        self, request: pb.StopReplicaRequest, context: _Context
    ) -> pb.StopReplicaResponse:
        return await self._replica_manager.stop_replicas(request)

    async def ControlledShutdown(
        self, request: pb.ControlledShutdownRequest, context: _Context
    ) -> pb.ControlledShutdownResponse:
        if self._controller is None:
            return pb.ControlledShutdownResponse(error_code=ErrorCode.NOT_CONTROLLER)
        future = self._controller.controlled_shutdown(request.broker_id, request.broker_epoch)
        outcome: ControlledShutdownOutcome = await asyncio.wrap_future(future)
        _log.info(
            "controlled_shutdown.answered",
            broker_id=request.broker_id,
            broker_epoch=request.broker_epoch,
            error=int(outcome.error),
            remaining=len(outcome.remaining),
        )
        response = pb.ControlledShutdownResponse(error_code=int(outcome.error))
        for topic, partition in outcome.remaining:
            response.remaining_partitions.add(topic_name=topic, partition_index=partition)
        return response
