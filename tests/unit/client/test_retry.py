"""The client's one retry loop (client/_retry.py), on a fake clock: no sleeping, no network."""

from __future__ import annotations

import types
from collections.abc import Callable

import pytest

from minikafka.client import _retry
from minikafka.client._retry import RetryLater, RetryPolicy, retry_or_raise
from minikafka.proto.errors import (
    ErrorCode,
    KafkaError,
    RequestTimedOutError,
    error_for_code,
)


class FakeClock:
    """``monotonic`` for the policy; ``sleep`` moves it on and records each back-off."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(_retry, "time", types.SimpleNamespace(monotonic=fake.monotonic))
    return fake


def failing(clock: FakeClock, attempts: list[float]) -> Callable[[], object]:
    """An attempt that always asks to be retried, recording when it ran."""

    def attempt() -> object:
        attempts.append(clock.now)
        raise RetryLater(f"attempt {len(attempts)} failed")

    return attempt


def test_the_first_answer_is_returned_after_retrying_only_retry_later(clock: FakeClock) -> None:
    answers: list[object] = [RetryLater("a"), RetryLater("b"), "done"]

    def attempt() -> object:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    policy = RetryPolicy(backoff_s=0.25, sleep=clock.sleep)
    assert policy.call(attempt, deadline=10.0) == "done"
    assert clock.sleeps == [0.25, 0.25]


def test_any_other_error_ends_the_call_at_once_unchanged(clock: FakeClock) -> None:
    calls = []
    not_retriable = error_for_code(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "no")

    def attempt() -> None:
        calls.append(clock.now)
        raise not_retriable

    policy = RetryPolicy(backoff_s=0.25, sleep=clock.sleep)
    with pytest.raises(KafkaError) as raised:
        policy.call(attempt, deadline=10.0)
    assert raised.value is not_retriable
    assert calls == [0.0]
    assert clock.sleeps == []


def test_no_back_off_is_started_that_would_end_at_or_past_the_deadline(clock: FakeClock) -> None:
    attempts: list[float] = []
    policy = RetryPolicy(backoff_s=0.25, sleep=clock.sleep)
    with pytest.raises(RequestTimedOutError, match="attempt 4 failed"):
        policy.call(failing(clock, attempts), deadline=1.0)
    # after the try at 0.75 a back-off would end at 1.0, the deadline: give up then
    assert attempts == [0.0, 0.25, 0.5, 0.75]
    assert clock.now < 1.0


def test_overrun_keeps_trying_until_the_deadline_has_passed(clock: FakeClock) -> None:
    attempts: list[float] = []
    policy = RetryPolicy(backoff_s=0.25, overrun=True, sleep=clock.sleep)
    with pytest.raises(RequestTimedOutError, match="attempt 5 failed"):
        policy.call(failing(clock, attempts), deadline=1.0)
    assert attempts == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_timed_out_gets_the_last_problem(clock: FakeClock) -> None:
    seen: list[RetryLater] = []

    def timed_out(last: RetryLater) -> Exception:
        seen.append(last)
        return RequestTimedOutError(f"call createTopics timed out after 1000 ms ({last})")

    policy = RetryPolicy(backoff_s=0.25, sleep=clock.sleep)
    with pytest.raises(RequestTimedOutError) as raised:
        policy.call(failing(clock, []), deadline=1.0, timed_out=timed_out)
    assert (
        str(raised.value.message) == "call createTopics timed out after 1000 ms (attempt 4 failed)"
    )
    assert [str(last) for last in seen] == ["attempt 4 failed"]


def test_a_wrapped_broker_error_is_raised_itself_when_time_runs_out(clock: FakeClock) -> None:
    not_yet = error_for_code(ErrorCode.COORDINATOR_NOT_AVAILABLE, "offsets topic has no leader")

    def attempt() -> None:
        raise retry_or_raise(not_yet)

    policy = RetryPolicy(backoff_s=0.25, sleep=clock.sleep)
    with pytest.raises(KafkaError) as raised:
        policy.call(attempt, deadline=1.0)
    assert raised.value is not_yet
    assert len(clock.sleeps) == 3


def test_retry_or_raise_retries_only_retriable_errors() -> None:
    retriable = error_for_code(ErrorCode.NOT_COORDINATOR, "moved")
    assert isinstance(retry_or_raise(retriable), RetryLater)
    fatal = error_for_code(ErrorCode.INVALID_GROUP_ID, "bad id")
    with pytest.raises(KafkaError) as raised:
        retry_or_raise(fatal)
    assert raised.value is fatal
