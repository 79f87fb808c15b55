"""The one seam between a scenario and the brokers' processes: fault a broker by its id.

    brokers: BrokerControl = LocalBrokers(...)      # processes replay started (local_brokers.py)
    brokers: BrokerControl = ComposeBrokers.discover("minikafka", addresses)   # containers
    brokers.kill(2)      # SIGKILL / docker kill
    brokers.pause(2)     # SIGSTOP / docker pause
    brokers.resume(2)    # SIGCONT / docker unpause
    brokers.start(2)     # a new process / docker start
    brokers.stop(2)      # SIGTERM, a controlled shutdown / docker stop
    brokers.close()      # local: kill every broker; compose: put back what replay changed

Besides the faults, a scenario reads each replica's log (what a follower holds, which no client
may ask) and may cut a stopped replica's unflushed tail (a power cut); an implementation that
cannot raises ``Unsupported``, and scenarios that need it say so before they start
(``Scenario.own_brokers``).
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["BrokerControl", "Unsupported"]


class Unsupported(Exception):
    """The brokers cannot do this here (a container has no page cache of its own to cut)."""


class BrokerControl(Protocol):
    @property
    def broker_ids(self) -> list[int]: ...

    @property
    def bootstrap_servers(self) -> str: ...

    def address(self, broker_id: int) -> str:
        """Where a client reaches the broker (gRPC)."""
        ...

    def control_address(self, broker_id: int) -> str:
        """Where a controller's requests reach the broker (its control plane listener)."""
        ...

    def start(self, broker_id: int) -> None: ...
    def kill(self, broker_id: int) -> None: ...
    def stop(self, broker_id: int) -> None: ...
    def pause(self, broker_id: int) -> None: ...
    def resume(self, broker_id: int) -> None: ...

    def replica_records(
        self, broker_id: int, topic: str, partition: int
    ) -> list[tuple[int, bytes | None]]:
        """(offset, value) of every record in the replica's segment files."""
        ...

    def lose_unflushed_tail(self, broker_id: int, topic: str, partition: int, offset: int) -> int:
        """A power cut: the stopped replica loses the batches from ``offset`` on."""
        ...

    def close(self) -> None: ...
