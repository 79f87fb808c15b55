"""What moving fetched bytes from a leader process to a follower process costs, per MiB (issue 18).

    python -m bench.transfer_bench [--sizes 262144,1048576,2097152] [--messages 200]
        [--rounds 3] [--transports grpc,kafka,socket] [--port-base N]

Two processes on 127.0.0.1. The "leader" answers each request with ``size`` bytes of records;
the "follower" sends the next request when it has the answer, one in flight, as a follower's
fetcher does. Three transports:

- grpc: ``Data.FetchStream`` over grpc.aio with the channel and server options the brokers use
  (proto/transport.py), the answer a ``FetchResponse`` with one partition's records: what
  replication costs today, protobuf and HTTP/2 included;
- socket: the same bytes as ``size:int32`` + payload frames over a plain TCP socket on the
  loop (the follower reads each answer into a buffer of its size), the shape of Kafka's own
  protocol: near the floor for any transport;
- kafka: the real Kafka-protocol follower endpoint (KafkaLeaderEndpoint, Fetch v12 with
  replica_id 1) against the real leader path of the Kafka door (KafkaListeners, connection.py,
  the Fetch handler and the fetch session cache), the records a slice the stand-in
  ReplicaManager hands over as a segment read would: what replication over the Kafka listener
  costs, minus the log's own reads and appends.

For each it prints MiB/s, the round trip and the CPU each side used per MiB moved (user +
system, from /proc). With RF3 every byte produced crosses twice (one copy per follower), so
the sum of both sides' CPU per MiB, times two, is what replication adds per MiB produced.

The leader listens on a port the kernel picks, or with ``--port-base N`` (bench/hygiene.py)
on the next free one from N up, a new one each run. The bench writes no files.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bench.codec_bench import yardstick
from bench.hygiene import PORT_SPAN, PortRange, add_port_base
from bench.stats import summary
from minikafka.broker.config import BrokerConfig
from minikafka.broker.replication.fetch_session import (
    FetchContext,
    FetchManager,
    FetchSessionCache,
)
from minikafka.broker.replication.requests import (
    FetchPartition,
    FetchPartitionResult,
    FetchRequest,
)
from minikafka.broker.server.core.fetch import FetchApi
from minikafka.broker.server.kafka.broker import KafkaBroker
from minikafka.broker.server.kafka.leader_endpoint import KafkaLeaderEndpoint
from minikafka.broker.server.kafka.listener import KafkaListeners
from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import transport
from minikafka.proto.common import EndPoint

_TICKS = os.sysconf("SC_CLK_TCK")
_FRAME = struct.Struct(">i")
_LIMIT = 64 << 20


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


class _Leader(pb_grpc.DataServicer):
    def __init__(self, size: int) -> None:
        self._records = os.urandom(size)

    async def FetchStream(
        self, requests: AsyncIterator[pb.FetchRequest], context: Any
    ) -> AsyncIterator[pb.FetchResponse]:
        async for _ in requests:
            response = pb.FetchResponse()
            response.responses.add(topic="t").partitions.add(records=self._records)
            yield response


class _ReplicaManager:
    """What a fetch asks of a ReplicaManager (the core's FetchSource): its session cache, and the
    read, which answers every partition with the same records (a slice, as of a segment)."""

    def __init__(self, size: int) -> None:
        self._records = memoryview(os.urandom(size))
        self.fetch_sessions = FetchManager(
            FetchSessionCache(1000, 120_000), lambda: int(time.time() * 1000)
        )

    async def fetch_messages(
        self, request: FetchRequest, context: FetchContext
    ) -> list[FetchPartitionResult]:
        return [
            FetchPartitionResult(
                p.topic, p.partition, 0, "", 1, 1, 0, self._records[: p.partition_max_bytes]
            )
            for p in request.partitions
        ]


def _kafka_config(root: Path, port: int = 0) -> BrokerConfig:
    return BrokerConfig(
        broker_id=0,
        zookeeper_connect="127.0.0.1:1",
        listeners=(EndPoint("PLAINTEXT", "127.0.0.1", 1),),
        kafka_listeners=(EndPoint("KAFKA", "127.0.0.1", port),),
        listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT", "KAFKA": "PLAINTEXT"},
        inter_broker_listener_name="KAFKA",
        control_plane_listener_name="PLAINTEXT",
        log_dirs=(root,),
    )


async def _serve(kind: str, size: int, port: int = 0) -> None:
    if kind == "kafka":
        unused: Any = None  # the Fetch handler reads only the core's FetchApi
        config = _kafka_config(Path("/nonexistent"), port)
        replica_manager: Any = _ReplicaManager(size)  # the part of one the handler uses
        listeners = KafkaListeners(
            KafkaBroker(
                config,
                replica_manager,
                metadata_cache=unused,
                metadata_api=unused,
                groups=None,
                admin=unused,
                producer_ids=unused,
                fetches=FetchApi(replica_manager, config.inter_broker_listener_name),
            )
        )
        (bound,) = await listeners.start()
        print(bound.rsplit(":", 1)[1], flush=True)
        await asyncio.Event().wait()
        return
    if kind == "grpc":
        server = transport.aio_server(_LIMIT)
        leader = _Leader(size)  # type: ignore[abstract]  # the rest: UNIMPLEMENTED
        pb_grpc.add_DataServicer_to_server(leader, server)
        grpc_port = server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        print(grpc_port, flush=True)
        await server.wait_for_termination()
        return
    records = os.urandom(size)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (length,) = _FRAME.unpack(await reader.readexactly(4))
                await reader.readexactly(length)
                writer.write(_FRAME.pack(len(records)))
                writer.write(records)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()  # the follower is done

    sock_server = await asyncio.start_server(answer, "127.0.0.1", port, limit=_LIMIT)
    print(sock_server.sockets[0].getsockname()[1], flush=True)
    await sock_server.serve_forever()


async def _follow(kind: str, port: int, messages: int, leader_pid: int) -> tuple[float, ...]:
    if kind == "grpc":
        channel = transport.aio_channel(f"127.0.0.1:{port}", _LIMIT)
        call = pb_grpc.DataStub(channel).FetchStream()

        async def exchange() -> int:
            await call.write(pb.FetchRequest(replica_id=1))
            response = await call.read()
            assert isinstance(response, pb.FetchResponse)
            return len(response.responses[0].partitions[0].records)

    elif kind == "kafka":
        endpoint = KafkaLeaderEndpoint(
            "127.0.0.1", port, timeout_s=30, max_response_bytes=_LIMIT, client_id="bench"
        )
        fetch = FetchRequest(
            1, 0, 1, _LIMIT, [FetchPartition("t", 0, 0, partition_max_bytes=_LIMIT)]
        )

        async def exchange() -> int:
            response = await endpoint.fetch(fetch)
            return len(response.partitions[0].records)

    else:
        # recv_into a buffer of the answer's size: asyncio's StreamReader grows and slices a
        # bytearray, which costs as much as the transfer at these sizes.
        loop = asyncio.get_running_loop()
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setblocking(False)
        request = _FRAME.pack(5) + b"fetch"

        async def read_into(view: memoryview) -> None:
            while view:
                view = view[await loop.sock_recv_into(sock, view) :]

        async def exchange() -> int:
            await loop.sock_sendall(sock, request)
            head = bytearray(4)
            await read_into(memoryview(head))
            (length,) = _FRAME.unpack(head)
            answer = bytearray(length)
            await read_into(memoryview(answer))
            return len(answer)

    for _ in range(5):
        await exchange()
    began, cpu, leader_cpu = time.perf_counter(), time.process_time(), _cpu_seconds(leader_pid)
    moved = 0
    for _ in range(messages):
        moved += await exchange()
    wall = time.perf_counter() - began
    mib = moved / 2**20
    result = (
        mib / wall,
        wall / messages * 1000,
        (_cpu_seconds(leader_pid) - leader_cpu) / mib * 1000,
        (time.process_time() - cpu) / mib * 1000,
    )
    if kind == "grpc":
        call.cancel()
        await channel.close()
    elif kind == "kafka":
        await endpoint.close()
    else:
        sock.close()
    return result


def run(kind: str, size: int, messages: int, listen_port: int = 0) -> tuple[float, ...]:
    """One run; the leader listens on ``listen_port`` (0: one the kernel picks)."""
    leader = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.transfer_bench",
            "--leader",
            kind,
            str(size),
            str(listen_port),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert leader.stdout is not None
        port = int(leader.stdout.readline())
        return asyncio.run(_follow(kind, port, messages, leader.pid))
    finally:
        leader.kill()
        leader.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="262144,1048576,2097152")
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transports", default="grpc,kafka,socket")
    parser.add_argument("--leader", nargs=3, help=argparse.SUPPRESS)
    add_port_base(parser)
    args = parser.parse_args()
    if args.leader:
        asyncio.run(_serve(args.leader[0], int(args.leader[1]), int(args.leader[2])))
        return
    ports = None if args.port_base is None else PortRange(args.port_base, PORT_SPAN * 10)
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    machine = yardstick()
    print(
        "| transport | answer | MiB/s | round trip ms | leader CPU ms/MiB | follower CPU ms/MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        for kind in args.transports.split(","):
            runs = [
                run(kind, size, args.messages, 0 if ports is None else ports())
                for _ in range(args.rounds)
            ]
            formats = (",.0f", ".2f", ".2f", ".2f")
            cells = [summary([r[i] for r in runs], fmt) for i, fmt in enumerate(formats)]
            print(f"| {kind} | {size / 2**20:.2f} MiB | " + " | ".join(cells) + " |", flush=True)
    print(
        f"\nmedian (range) of {args.rounds} rounds of {args.messages} answers; "
        f"{os.cpu_count()} cores; machine yardstick {machine:,.0f}; {time.strftime('%Y-%m-%d')}; "
        f"load average before {load_before}, after " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )


if __name__ == "__main__":
    main()
