"""Who may send controller requests: the fence in front of LeaderAndIsr, UpdateMetadata and
StopReplica.

    fence = ControllerFence(zk, broker_id=1, broker_epoch=lambda: server.broker_epoch)
    refusal = await fence.check(request.controller_id, request.controller_epoch,
                                request.broker_epoch)
    if refusal is not None:
        return Response(error_code=refusal.error, error_message=refusal.message)

The ReplicaManager's own fencing (``check_controller_request``) refuses a controller epoch
older than the newest it has seen, and a broker epoch from an older registration. That trusts
whatever epoch a request claims: a request with a made-up, higher epoch would be obeyed and
would fence the real controller out. So before it, this fence:

* refuses a ``broker_epoch`` other than this broker's current one (STALE_BROKER_EPOCH): the
  controller always knows the registration it is talking to. Kafka lets a larger one through
  (its isBrokerEpochStale: the controller may see a new registration before the broker has
  its own epoch back from ZooKeeper); here a larger one is obeyed only when ZooKeeper's
  ``/brokers/ids/<id>`` already has exactly that epoch, which closes the same race;
* lets through, without any ZooKeeper read, an epoch it already confirmed when the sender is
  the controller it confirmed for that epoch, and an older epoch (the ReplicaManager refuses
  those as stale). This is every request of a stable cluster;
* reads ``/controller`` and ``/controller_epoch`` when a request claims an epoch newer than any
  it confirmed (a new controller's first request, or a forgery), and refuses it
  (STALE_CONTROLLER_EPOCH) unless ZooKeeper names the sender as controller with exactly that
  epoch. A confirmed pair is kept; the next controller's first request confirms the next one.

A ZooKeeper that cannot be read refuses the request too: an unconfirmed epoch is never obeyed.
Reads from a ZooKeeper ensemble may lag behind the leader's writes, so the slow paths first
call ``sync`` (kazoo's ``sync``: the server this session talks to catches up), when given.

A refusal's message says only what kind of thing was wrong ("stale broker epoch", "stale
controller epoch"), with no number and no broker id, neither the request's nor the cluster's:
a sender that is told who the controller is and its epoch, or which of its guesses came close,
has what it needs to forge the next request. The log line of each refusal carries the values.

Before any of this, ``authorize`` asks the authorizer (core/authorization.py) for ClusterAction
on the cluster, which Kafka requires of every controller request and of ControlledShutdown: a
principal without it is refused CLUSTER_AUTHORIZATION_FAILED, logged, and nothing is read or
applied.

The epochs are no authentication: a sender that copies the current controller's id and epoch
from ZooKeeper passes them. Authentication (TLS, SASL) and ClusterAction are; until listeners
authenticate, serving the Control service on the inter-broker listener only (BrokerServer)
is.

Runs on the broker's event loop; the ZooKeeper reads go to a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from minikafka.broker.security.acl import ResourceType
from minikafka.broker.security.principal import Session
from minikafka.broker.server.core.authorization import AuthHelper
from minikafka.proto.cluster_state import Versioned
from minikafka.proto.errors import ErrorCode
from minikafka.zk.zk_data import ControllerRegistration

__all__ = [
    "STALE_BROKER_EPOCH",
    "STALE_CONTROLLER_EPOCH",
    "UNKNOWN_BROKER_EPOCH",
    "ControllerFence",
    "ControllerZnodes",
    "Refusal",
]

_log = structlog.get_logger(__name__)

_READ_ATTEMPTS = 3

STALE_CONTROLLER_EPOCH = "stale controller epoch"
STALE_BROKER_EPOCH = "stale broker epoch"
UNKNOWN_BROKER_EPOCH = "unknown broker epoch"
NOT_AUTHORIZED = "Cluster authorization failed."


class ControllerZnodes(Protocol):
    """The reads the fence makes (ZkStore satisfies it)."""

    def get_controller(self) -> ControllerRegistration | None: ...

    def get_controller_epoch(self) -> Versioned[int] | None: ...

    def get_broker_epoch(self, broker_id: int) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Refusal:
    error: ErrorCode
    message: str


class ControllerFence:
    """See the module docstring. Not thread-safe: the broker's event loop only."""

    def __init__(
        self,
        zk: ControllerZnodes,
        *,
        broker_id: int,
        broker_epoch: Callable[[], int],
        sync: Callable[[], object] | None = None,
        auth: AuthHelper | None = None,
    ) -> None:
        """``broker_epoch``: this broker's current one (-1 before it has registered)."""
        self._auth = auth or AuthHelper()
        self._zk = zk
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._sync = sync
        # (controller id, controller epoch) last confirmed in ZooKeeper
        self._confirmed: tuple[int, int] | None = None

    @property
    def confirmed(self) -> tuple[int, int] | None:
        return self._confirmed

    def authorize(self, session: Session, api: str) -> Refusal | None:
        """None when ``session``'s principal has ClusterAction on the cluster, which ``api``
        (LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown) needs."""
        if self._auth.allows(session, api, ResourceType.CLUSTER):
            return None
        _log.warning(
            "controller_request.unauthorized",
            api=api,
            principal=str(session.principal),
            client_host=session.client_host,
            listener=session.listener,
        )
        return Refusal(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, NOT_AUTHORIZED)

    async def check(
        self, controller_id: int, controller_epoch: int, broker_epoch: int
    ) -> Refusal | None:
        """None when the request may go on to the ReplicaManager, else why not."""
        wrong_broker_epoch = await self._check_broker_epoch(broker_epoch)
        if wrong_broker_epoch is not None:
            return self._refuse(
                ErrorCode.STALE_BROKER_EPOCH,
                wrong_broker_epoch,
                controller_id,
                controller_epoch,
                broker_epoch,
            )
        not_the_controller = STALE_CONTROLLER_EPOCH
        confirmed = self._confirmed
        if confirmed is not None and controller_epoch <= confirmed[1]:
            if controller_epoch == confirmed[1] and controller_id != confirmed[0]:
                return self._refuse(
                    ErrorCode.STALE_CONTROLLER_EPOCH,
                    not_the_controller,
                    controller_id,
                    controller_epoch,
                    broker_epoch,
                    confirmed=confirmed,
                )
            return None
        try:
            current = await asyncio.to_thread(self._read_controller)
        except Exception as exc:
            return self._refuse(
                ErrorCode.STALE_CONTROLLER_EPOCH,
                "controller epoch cannot be confirmed now",
                controller_id,
                controller_epoch,
                broker_epoch,
                zookeeper_error=repr(exc),
            )
        if current != (controller_id, controller_epoch):
            return self._refuse(
                ErrorCode.STALE_CONTROLLER_EPOCH,
                not_the_controller,
                controller_id,
                controller_epoch,
                broker_epoch,
                confirmed=current,
            )
        if self._confirmed is None or controller_epoch > self._confirmed[1]:
            self._confirmed = current
            _log.info(
                "controller_confirmed",
                controller_id=controller_id,
                controller_epoch=controller_epoch,
            )
        return None

    async def _check_broker_epoch(self, broker_epoch: int) -> str | None:
        """None when ``broker_epoch`` is this broker's current registration, else what is
        wrong with it."""
        current = self._broker_epoch()
        if broker_epoch == current and current >= 0:
            return None
        if 0 <= broker_epoch < current:
            return STALE_BROKER_EPOCH
        if broker_epoch >= 0:
            # Larger than the one this broker knows: a registration it is making may already
            # be in ZooKeeper, and the controller may have seen it first.
            try:
                registered = await asyncio.to_thread(self._read_broker_epoch)
            except Exception as exc:
                _log.warning("broker_epoch.unreadable", error=repr(exc))
                registered = None
            if registered == broker_epoch:
                return None
        return UNKNOWN_BROKER_EPOCH

    def _read_broker_epoch(self) -> int | None:
        if self._sync is not None:
            self._sync()
        return self._zk.get_broker_epoch(self._broker_id)

    def _read_controller(self) -> tuple[int, int] | None:
        """``(id, epoch)`` from /controller and /controller_epoch, or None without a controller.

        The two znodes change together (one multi-op per election), but they are read one after
        the other: an epoch that moved between the reads means an election in between, so read
        again.
        """
        if self._sync is not None:
            self._sync()
        for _ in range(_READ_ATTEMPTS):
            before = self._zk.get_controller_epoch()
            controller = self._zk.get_controller()
            after = self._zk.get_controller_epoch()
            if before == after:
                if controller is None or after is None:
                    return None
                return controller.broker_id, after.value
        raise RuntimeError("the controller kept changing while it was read")

    def _refuse(
        self,
        error: ErrorCode,
        message: str,
        controller_id: int,
        controller_epoch: int,
        broker_epoch: int,
        **known: object,
    ) -> Refusal:
        """The refusal, and a log line with what the message leaves out (``known``)."""
        _log.warning(
            "controller_request.refused",
            error=error.name,
            controller_id=controller_id,
            controller_epoch=controller_epoch,
            broker_epoch=broker_epoch,
            current_broker_epoch=self._broker_epoch(),
            reason=message,
            **known,
        )
        return Refusal(error, message)
