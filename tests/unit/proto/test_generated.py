"""The generated gRPC modules: up to date with minikafka.proto, importable, and shaped by its rules.

``scripts/gen-proto.sh --check`` regenerates into a temporary directory and compares; running it
here makes the suite fail when someone edits the .proto without regenerating (or edits the
generated files by hand).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from minikafka.proto import minikafka_pb2 as pb
from minikafka.proto import minikafka_pb2_grpc as pb_grpc
from minikafka.proto import records

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "gen-proto.sh"
GENERATED = (
    "proto/minikafka_pb2.py",
    "proto/minikafka_pb2.pyi",
    "proto/minikafka_pb2_grpc.py",
    "proto/minikafka_pb2_grpc.pyi",
)

SERVICES = {
    "Data": [
        "Produce",
        "Fetch",
        "ProduceStream",
        "FetchStream",
        "ListOffsets",
        "OffsetsForLeaderEpoch",
        "InitProducerId",
    ],
    "Metadata": ["Metadata", "DescribeCluster"],
    "Admin": [
        "CreateTopics",
        "DeleteTopics",
        "CreatePartitions",
        "ElectLeaders",
        "AlterPartitionReassignments",
        "ListPartitionReassignments",
        "DescribeConfigs",
        "IncrementalAlterConfigs",
        "DeleteRecords",
        "DescribeReplicas",
        "DescribeLogDirs",
        "AlterReplicaLogDirs",
        "DescribeAcls",
        "CreateAcls",
        "DeleteAcls",
        "DescribeUserScramCredentials",
        "AlterUserScramCredentials",
        "DescribeClientQuotas",
        "AlterClientQuotas",
        "DescribeProducers",
    ],
    "Control": [
        "LeaderAndIsr",
        "UpdateMetadata",
        "StopReplica",
        "ControlledShutdown",
        "WriteTxnMarkers",
    ],
    "Group": [
        "FindCoordinator",
        "JoinGroup",
        "SyncGroup",
        "Heartbeat",
        "LeaveGroup",
        "OffsetCommit",
        "OffsetFetch",
        "ListGroups",
        "DescribeGroups",
        "DeleteGroups",
        "TxnOffsetCommit",
    ],
    "Security": ["SaslHandshake", "SaslAuthenticate"],
    "Transaction": [
        "AddPartitionsToTxn",
        "AddOffsetsToTxn",
        "EndTxn",
        "DescribeTransactions",
        "ListTransactions",
    ],
}

# Responses whose top-level error_code is Kafka's request-wide code; Kafka gives them no message.
TOP_LEVEL_CODE_ONLY = {
    "FetchResponse",
    "ElectLeadersResponse",
    "LeaderAndIsrResponse",
    "UpdateMetadataResponse",
    "StopReplicaResponse",
    "ControlledShutdownResponse",
}


def run_check(repo: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(
        ["bash", str(repo / "scripts" / "gen-proto.sh"), "--check"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def all_messages() -> list[Descriptor]:
    out: list[Descriptor] = []

    def walk(descriptor: Descriptor) -> None:
        out.append(descriptor)
        for nested in descriptor.nested_types:
            walk(nested)

    for descriptor in pb.DESCRIPTOR.message_types_by_name.values():
        walk(descriptor)
    return out


def test_checked_in_code_matches_the_proto() -> None:
    result = run_check(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "up to date" in result.stdout


def test_check_fails_on_stale_code(tmp_path: Path) -> None:
    for relative in ("scripts/gen-proto.sh", "proto/minikafka.proto", *GENERATED):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / relative, tmp_path / relative)
    proto_file = tmp_path / "proto" / "minikafka.proto"
    proto_file.write_text(proto_file.read_text() + "\nmessage AddedLater {}\n")

    result = run_check(tmp_path)

    assert result.returncode == 1
    assert "proto/minikafka_pb2.py" in result.stderr
    assert "run scripts/gen-proto.sh" in result.stderr


def test_grpc_module_imports_our_messages_module() -> None:
    # protoc saw the file as minikafka/proto/minikafka.proto, so the service module imports
    # `from minikafka.proto import minikafka_pb2`: our module, not a top-level `proto`.
    assert getattr(pb_grpc, "minikafka_dot_proto_dot_minikafka__pb2") is pb  # noqa: B009
    assert pb.DESCRIPTOR.package == "minikafka.v1"


def test_services_and_methods() -> None:
    found = {
        name: [method.name for method in service.methods]
        for name, service in pb.DESCRIPTOR.services_by_name.items()
    }
    assert found == SERVICES
    for name in SERVICES:
        assert hasattr(pb_grpc, f"{name}Stub")
        assert hasattr(pb_grpc, f"{name}Servicer")
        assert hasattr(pb_grpc, f"add_{name}Servicer_to_server")


def test_every_error_code_comes_with_a_message() -> None:
    for descriptor in all_messages():
        fields = descriptor.fields_by_name
        if "error_code" not in fields:
            continue
        assert fields["error_code"].type == FieldDescriptor.TYPE_INT32, descriptor.full_name
        if descriptor.name in TOP_LEVEL_CODE_ONLY:
            continue
        assert "error_message" in fields, descriptor.full_name


def test_records_are_opaque_bytes() -> None:
    # Record data is RecordBatch v2 owned by proto/records.py, never protobuf messages.
    for descriptor in all_messages():
        assert "Record" not in descriptor.name or "Records" in descriptor.name, descriptor.name
        field = descriptor.fields_by_name.get("records")
        if field is not None:
            assert field.type == FieldDescriptor.TYPE_BYTES, descriptor.full_name


def test_produce_request_carries_record_batches_unchanged() -> None:
    batch = records.encode_batch([(1_700_000_000_000, b"k", b"v", ())]) * 2
    request = pb.ProduceRequest(
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            pb.ProduceRequest.TopicProduceData(
                name="orders",
                partition_data=[pb.ProduceRequest.PartitionProduceData(index=3, records=batch)],
            )
        ],
    )

    decoded = pb.ProduceRequest.FromString(request.SerializeToString())

    partition = decoded.topic_data[0].partition_data[0]
    assert (decoded.acks, partition.index, partition.records) == (-1, 3, batch)
    assert [r.value for r in records.decode_records(partition.records)] == [b"v", b"v"]


def test_enum_values_are_kafkas() -> None:
    assert pb.CONFIG_RESOURCE_TYPE_TOPIC == 2
    assert pb.CONFIG_RESOURCE_TYPE_BROKER == 4
    assert pb.ELECTION_TYPE_PREFERRED == 0
    assert pb.ELECTION_TYPE_UNCLEAN == 1
    assert pb.CONFIG_SOURCE_STATIC_BROKER_CONFIG == 4
    assert pb.CONFIG_SOURCE_DEFAULT_CONFIG == 5
    assert (pb.CONFIG_OPERATION_SET, pb.CONFIG_OPERATION_DELETE) == (0, 1)


def test_diverging_epoch_is_absent_unless_set() -> None:
    data = pb.FetchResponse.PartitionData(partition_index=0, high_watermark=10)
    assert not data.HasField("diverging_epoch")
    data.diverging_epoch.epoch = 4
    data.diverging_epoch.end_offset = 7
    assert data.HasField("diverging_epoch")
