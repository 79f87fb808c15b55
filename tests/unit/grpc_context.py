"""A servicer context for calling a gRPC servicer's method directly in a unit test: the peer
is all the servicers read of it (``grpc_session`` takes the caller's address from it)."""

from __future__ import annotations


class PeerContext:
    def __init__(self, peer: str = "ipv4:127.0.0.1:50000") -> None:
        self._peer = peer

    def peer(self) -> str:
        return self._peer
