"""The client's log events: records of Python's ``logging``, silent until configured."""

from __future__ import annotations

import logging

import pytest

import minikafka.client
from minikafka.client._log import event_logger


def test_the_package_logger_has_a_null_handler_so_nothing_reaches_last_resort() -> None:
    logger = logging.getLogger(minikafka.client.__name__)
    assert logger.name == "minikafka.client"
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)


def test_an_event_is_its_name_and_fields_logged_from_the_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = event_logger("minikafka.client.consumer.coordinator")
    with caplog.at_level(logging.DEBUG, logger="minikafka.client"):
        log.info("group.joined", group_id="billing", generation_id=3)
        log.debug("group.committed", offsets={"t-0": 10})
    first, second = caplog.records
    assert (first.name, first.levelname) == ("minikafka.client.consumer.coordinator", "INFO")
    assert first.getMessage() == "group.joined group_id=billing generation_id=3"
    assert first.funcName == "test_an_event_is_its_name_and_fields_logged_from_the_caller"
    assert second.getMessage() == "group.committed offsets={'t-0': 10}"


def test_a_disabled_level_formats_nothing(caplog: pytest.LogCaptureFixture) -> None:
    class Loud:
        def __str__(self) -> str:
            raise AssertionError("formatted although nobody listens")

    log = event_logger("minikafka.client.producer.sender")
    with caplog.at_level(logging.INFO, logger="minikafka.client"):
        log.debug("producer.retry", error=Loud())
    assert caplog.records == []
