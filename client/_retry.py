"""The client's one retry loop: try, back off, try again until a deadline, then say why not.

    policy = RetryPolicy(backoff_s=0.1)
    deadline = time.monotonic() + timeout_ms / 1000

    def attempt() -> pb.CreateTopicsResponse:
        ...                                      # one try; may raise anything
        raise RetryLater("broker 2 is no longer the controller")   # worth another try

    response = policy.call(attempt, deadline=deadline,
                           timed_out=lambda last: RequestTimedOutError(f"... ({last})"))

An attempt raises ``RetryLater`` for a failure a later attempt may not have (a controller that
moved, a leader not elected yet, a broker that did not answer); every other exception ends the
call at once, unchanged. When the time is up, ``timed_out`` turns the last ``RetryLater`` into
the error to raise; by default that is the error the attempt wrapped (``RetryLater(error)``),
or RequestTimedOutError with the last problem.

When to give up, two ways, as the callers always did:
* by default (the AdminClient's calls) no back-off is started that would end at or past the
  deadline: the call fails a back-off early rather than late;
* ``overrun=True`` (the consumer's group calls, the wait for a topic's metadata) keeps trying
  until the deadline has passed, so the last back-off may end after it.

The loop itself is tenacity's (``Retrying``): the stop condition is the deadline above, the
wait a fixed back-off (Kafka's ``retry.backoff.ms``), and ``sleep`` may be replaced, e.g. by an
Event's ``wait`` so that closing a consumer cuts its back-off short.

Thread-safe: a policy is an immutable value; each ``call`` runs on the caller's thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type, wait_fixed

from minikafka.proto.errors import KafkaError, RequestTimedOutError

__all__ = ["RetryLater", "RetryPolicy", "retry_or_raise"]

R = TypeVar("R")


class RetryLater(Exception):
    """An attempt failed in a way a later one may not. ``problem`` says how: a message for the
    error raised when time runs out, or the error itself, raised as it is then."""

    def __init__(self, problem: str | Exception) -> None:
        super().__init__(str(problem))
        self.problem = problem


def retry_or_raise(error: KafkaError) -> RetryLater:
    """A broker's error as a RetryLater when it is retriable (raised as it is when time runs
    out); any other error is raised at once."""
    if not error.retriable:
        raise error
    return RetryLater(error)


def raise_last_problem(last: RetryLater) -> Exception:
    """The default ``timed_out``: the wrapped error, else RequestTimedOutError saying why."""
    if isinstance(last.problem, Exception):
        return last.problem
    return RequestTimedOutError(last.problem)


@dataclass(frozen=True)
class RetryPolicy:
    """How long to back off between attempts and when to give up (see the module docstring)."""

    backoff_s: float
    overrun: bool = False  # True: try until the deadline has passed; False: stop a back-off early
    sleep: Callable[[float], object] = time.sleep

    def call(
        self,
        attempt: Callable[[], R],
        *,
        deadline: float,
        timed_out: Callable[[RetryLater], Exception] = raise_last_problem,
    ) -> R:
        """``attempt()`` until it returns, raises something other than RetryLater, or the
        deadline (``time.monotonic()`` seconds) comes; then ``timed_out(last)`` is raised."""
        margin = 0.0 if self.overrun else self.backoff_s

        def out_of_time(state: RetryCallState) -> bool:
            return time.monotonic() + margin >= deadline

        def give_up(state: RetryCallState) -> R:
            last = state.outcome.exception() if state.outcome is not None else None
            assert isinstance(last, RetryLater)  # anything else was not retried
            raise timed_out(last) from None

        def back_off(seconds: float) -> None:
            self.sleep(seconds)

        retrying = Retrying(
            stop=out_of_time,
            wait=wait_fixed(self.backoff_s),
            retry=retry_if_exception_type(RetryLater),
            sleep=back_off,
            retry_error_callback=give_up,
        )
        return retrying(attempt)
