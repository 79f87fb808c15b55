"""The ``minikafka`` package exports exactly the names we mean, and importing it stays light."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import minikafka
from minikafka.client._security import ClientSecurity
from minikafka.client.admin import AdminClient, NewTopic
from minikafka.client.consumer.consumer import Consumer
from minikafka.client.consumer.fetcher import ConsumerRecord, OffsetAndTimestamp
from minikafka.client.producer.future import RecordMetadata
from minikafka.client.producer.producer import Producer
from minikafka.proto import errors
from minikafka.proto.common import TopicPartition

CLIENT_NAMES = {
    "Admin": AdminClient,
    "AdminClient": AdminClient,
    "ClientSecurity": ClientSecurity,
    "Consumer": Consumer,
    "ConsumerRecord": ConsumerRecord,
    "NewTopic": NewTopic,
    "OffsetAndTimestamp": OffsetAndTimestamp,
    "Producer": Producer,
    "RecordMetadata": RecordMetadata,
    "TopicPartition": TopicPartition,
}


def _named_errors() -> set[str]:
    """The exception classes proto.errors defines under their own name, and its helpers."""
    return {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.KafkaError)
    } | {"ErrorCode", "error_for_code"}


def test_all_is_the_client_names_and_the_errors() -> None:
    assert set(minikafka.__all__) == set(CLIENT_NAMES) | _named_errors()
    assert minikafka.__all__ == sorted(minikafka.__all__)


def test_each_name_is_the_object_it_stands_for() -> None:
    for name, value in CLIENT_NAMES.items():
        assert getattr(minikafka, name) is value, name
    for name in _named_errors():
        assert getattr(minikafka, name) is getattr(errors, name), name
    assert issubclass(minikafka.UnknownTopicOrPartitionError, minikafka.KafkaError)


def test_every_name_in_all_resolves_and_dir_lists_it() -> None:
    for name in minikafka.__all__:
        assert getattr(minikafka, name) is not None
    assert set(minikafka.__all__) <= set(dir(minikafka))


def test_unknown_names_raise_attribute_error() -> None:
    try:
        minikafka.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_minikafka_loads_neither_grpc_nor_the_broker() -> None:
    code = (
        "import sys, minikafka\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('grpc', 'broker', 'kazoo')]\n"
        "print(','.join(sorted(loaded)))\n"
    )
    repo_root = Path(__file__).resolve().parents[3]
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert result.stdout.strip() == ""
