"""The Control RPC family: LeaderAndIsr, UpdateMetadata, StopReplica (controller -> broker) and
ControlledShutdown (broker -> controller).

A request that arrives before this broker has
registered in ZooKeeper (a restart waits for its previous session to expire) waits for the
registration, as Kafka processes no request before it: only then can the broker tell the
registration being made from the previous one. Fencing happens twice. First ``ControllerFence``
(core/controller_fence.py): broker_epoch must be this broker's current one, and a controller
epoch newer than the broker has confirmed must be the one ZooKeeper's /controller and
/controller_epoch hold for the sender. Then the ReplicaManager's: the three controller requests
share its newest-seen controller epoch, as in Kafka. A refusal carries in ``error_message`` what
kind of thing was wrong with the request ("stale controller epoch"), never an epoch or a
controller id (the log line has them). Before all of it, the caller's principal needs
ClusterAction on the cluster (``ControllerFence.authorize``, also for ControlledShutdown): else
CLUSTER_AUTHORIZATION_FAILED, logged, nothing applied. LeaderAndIsr and StopReplica reach the
ReplicaManager as its plain values (grpc_adapters.py); UpdateMetadata goes to the MetadataCache
as it came, and the partitions it deletes to ``on_partitions_deleted`` (the group coordinator
forgets their committed offsets, as Kafka's KafkaApis tells its GroupCoordinator). BrokerServer
adds this service only to the inter-broker listener when other listeners are configured.
ControlledShutdown is handed to the controller object running in this process (its
``controlled_shutdown`` returns a ``concurrent.futures.Future``, awaited here without blocking
the loop); a broker that runs no controller answers NOT_CONTROLLER.

Runs on the broker's event loop (grpc.aio).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import grpc
import structlog

from minikafka.broker.replication.replica_manager import ReplicaManager
from minikafka.broker.replication.requests import TxnMarker, by_topic
from minikafka.broker.security.principal import Session
from minikafka.broker.server import grpc_adapters as adapt
from minikafka.broker.server.core.controller_fence import (
    STALE_BROKER_EPOCH,
    STALE_CONTROLLER_EPOCH,
    ControllerFence,
    Refusal,
)
from minikafka.broker.server.grpc_session import grpc_session
from minikafka.broker.server.metadata_cache import MetadataCache
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto.common import TopicPartition
from minikafka.proto.errors import ErrorCode

__all__ = ["ControlService", "ShutdownController"]

_Context = grpc.aio.ServicerContext[Any, Any]

_log = structlog.get_logger(__name__)

# How long a controller request waits for this broker's registration (a restart waits for its
# previous session to expire first: zookeeper.session.timeout.ms plus ZooKeeper's tick).
_REGISTRATION_WAIT_S = 30.0


class ControlledShutdownOutcome(Protocol):
    @property
    def error(self) -> int: ...

    @property
    def remaining(self) -> Sequence[tuple[str, int]]: ...


class _ControllerRequest(Protocol):
    @property
    def controller_id(self) -> int: ...

    @property
    def controller_epoch(self) -> int: ...

    @property
    def broker_epoch(self) -> int: ...


class ShutdownController(Protocol):
    """What ControlledShutdown needs of the KafkaController."""

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> concurrent.futures.Future[Any]: ...


class MarkerWriter(Protocol):
    """The core's WriteTxnMarkers (core/transactions.py): one map of partition to error code
    per marker, in request order."""

    async def write_txn_markers(
        self, markers: Sequence[TxnMarker], session: Session
    ) -> list[dict[TopicPartition, int]]: ...


class ControlService(pb_grpc.ControlServicer):
    """Requests from the controller, and ControlledShutdown to it."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        metadata_cache: MetadataCache,
        controller: ShutdownController | None = None,
        *,
        fence: ControllerFence,
        on_partitions_deleted: Callable[[Sequence[TopicPartition]], object] | None = None,
        listener: str = "",
        markers: MarkerWriter | None = None,
    ) -> None:
        self._listener = listener
        self._markers = markers
        self._replica_manager = replica_manager
        self._metadata_cache = metadata_cache
        self._fence = fence
        self._controller = controller
        self._on_partitions_deleted = on_partitions_deleted

    async def _admit(
        self, request: _ControllerRequest, context: _Context, api: str
    ) -> Refusal | None:
        """ClusterAction, the fence, then the ReplicaManager's stale-epoch check (as a
        message)."""
        unauthorized = self._fence.authorize(grpc_session(context, self._listener), api)
        if unauthorized is not None:
            return unauthorized
        await self._replica_manager.wait_until_registered(_REGISTRATION_WAIT_S)
        refusal = await self._fence.check(
            request.controller_id, request.controller_epoch, request.broker_epoch
        )
        if refusal is not None:
            return refusal
        if request.controller_epoch < self._replica_manager.controller_epoch:
            code = ErrorCode.STALE_CONTROLLER_EPOCH
            return Refusal(code, _explain(code, request))
        return None

    async def LeaderAndIsr(
        self, request: pb.LeaderAndIsrRequest, context: _Context
    ) -> pb.LeaderAndIsrResponse:
        refusal = await self._admit(request, context, "LeaderAndIsr")
        if refusal is not None:
            return pb.LeaderAndIsrResponse(error_code=refusal.error, error_message=refusal.message)
        result = await self._replica_manager.become_leader_or_follower(
            adapt.leader_and_isr_request(request)
        )
        return adapt.leader_and_isr_response(result, _explain(result.error_code, request))

    async def UpdateMetadata(
        self, request: pb.UpdateMetadataRequest, context: _Context
    ) -> pb.UpdateMetadataResponse:
        refusal = await self._admit(request, context, "UpdateMetadata")
        if refusal is not None:
            return pb.UpdateMetadataResponse(
                error_code=refusal.error, error_message=refusal.message
            )
        code = self._replica_manager.check_controller_request(
            request.controller_epoch, request.broker_epoch
        )
        if code == ErrorCode.NONE:
            deleted = self._metadata_cache.update(request)
            if deleted and self._on_partitions_deleted is not None:
                self._on_partitions_deleted(deleted)
        return pb.UpdateMetadataResponse(error_code=code, error_message=_explain(code, request))

    async def StopReplica(
        self, request: pb.StopReplicaRequest, context: _Context
    ) -> pb.StopReplicaResponse:
        refusal = await self._admit(request, context, "StopReplica")
        if refusal is not None:
            return pb.StopReplicaResponse(error_code=refusal.error, error_message=refusal.message)
        result = await self._replica_manager.stop_replicas(adapt.stop_replica_request(request))
        return adapt.stop_replica_response(result, _explain(result.error_code, request))

    async def ControlledShutdown(
        self, request: pb.ControlledShutdownRequest, context: _Context
    ) -> pb.ControlledShutdownResponse:
        unauthorized = self._fence.authorize(
            grpc_session(context, self._listener), "ControlledShutdown"
        )
        if unauthorized is not None:
            return pb.ControlledShutdownResponse(error_code=unauthorized.error)
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

    async def WriteTxnMarkers(
        self, request: pb.WriteTxnMarkersRequest, context: _Context
    ) -> pb.WriteTxnMarkersResponse:
        """From a transaction coordinator (another broker): ClusterAction first, as Kafka."""
        session = grpc_session(context, self._listener)
        unauthorized = self._fence.authorize(session, "WriteTxnMarkers")
        markers = [
            TxnMarker(
                m.producer_id,
                m.producer_epoch,
                m.coordinator_epoch,
                m.transaction_result,
                [TopicPartition(t.name, p) for t in m.topics for p in t.partition_indexes],
            )
            for m in request.markers
        ]
        if unauthorized is not None or self._markers is None:
            # A broker built without the transaction core cannot append markers: the
            # coordinator retries NOT_LEADER_OR_FOLLOWER against a fresher leader.
            code = (
                unauthorized.error if unauthorized is not None else ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
            results = [{tp: int(code) for tp in m.partitions} for m in markers]
        else:
            results = await self._markers.write_txn_markers(markers, session)
        response = pb.WriteTxnMarkersResponse()
        for marker, errors in zip(markers, results, strict=True):
            answer = response.markers.add(producer_id=marker.producer_id)
            for topic, partitions in by_topic(errors).items():
                answer.topics.add(
                    name=topic,
                    partitions=[
                        pb.WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult(
                            partition_index=tp.partition, error_code=errors[tp]
                        )
                        for tp in partitions
                    ],
                )
        return response


def _explain(code: int, request: _ControllerRequest) -> str:
    """The message of a refusal the ReplicaManager answered with a bare code: what kind of
    thing was wrong with the request, no epoch and no id (core/controller_fence.py); the log
    line has the values."""
    if code == ErrorCode.STALE_BROKER_EPOCH:
        message = STALE_BROKER_EPOCH
    elif code == ErrorCode.STALE_CONTROLLER_EPOCH:
        message = STALE_CONTROLLER_EPOCH
    else:
        return ""
    _log.warning(
        "controller_request.refused",
        error=ErrorCode(code).name,
        controller_id=request.controller_id,
        controller_epoch=request.controller_epoch,
        broker_epoch=request.broker_epoch,
        reason=message,
    )
    return message
