"""Every gRPC channel and server comes from proto/transport.py, with limits from the config."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.proto import transport

REPO_ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("broker", "controller", "client", "proto", "spark_jobs", "minikafka", "bench")
_MADE_ELSEWHERE = re.compile(r"grpc\.(aio\.)?(insecure_channel|secure_channel|server)\(")


def test_limits_are_the_payload_plus_the_envelope() -> None:
    options = dict(transport.message_options(10 << 20))
    limit = (10 << 20) + transport.ENVELOPE_BYTES
    assert options == {
        "grpc.max_send_message_length": limit,
        "grpc.max_receive_message_length": limit,
    }
    assert dict(transport.message_options(2**31))["grpc.max_receive_message_length"] == 2**31 - 1
    with pytest.raises(ValueError, match="positive"):
        transport.message_options(0)


def test_no_module_makes_a_channel_or_server_itself() -> None:
    offenders = [
        f"{path.relative_to(REPO_ROOT)}:{number}"
        for package in PACKAGES
        for path in sorted((REPO_ROOT / package).rglob("*.py"))
        if path.name != "transport.py" or path.parent.name != "proto"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _MADE_ELSEWHERE.search(line)
    ]
    assert offenders == []


def test_the_broker_limit_is_the_largest_message_its_config_allows() -> None:
    def limit(*overrides: str) -> int:
        config = BrokerConfig.load(
            overrides=["broker.id=1", "zookeeper.connect=zk:2181", *overrides], environ={}
        )
        return config.grpc_max_message_bytes

    assert limit() == 104_857_600  # socket.request.max.bytes, the largest default
    assert limit("fetch.max.bytes=209715200") == 209_715_200
    assert limit("replica.fetch.response.max.bytes=314572800") == 314_572_800
    assert limit("message.max.bytes=419430400") == 419_430_400
    assert limit("socket.request.max.bytes=1048576") == 57_671_680  # fetch.max.bytes then
