"""engine/worker's `call_isolated`: a function of the caller's run in a worker, as `run` runs a
configuration (verify and export call the user's model through it): its value comes back
pickled, what it tells arrives as it goes, an AccelbenchError is raised again here, and an exit,
a signal, an exception or a hang is a Called with a status and one line, never this process's
end."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from accelbench.engine.worker import Called, call_isolated
from accelbench.errors import MissingDependency, UsageError


def _double(value: int, tell) -> int:
    for step in range(3):
        tell(step)
    return 2 * value


def _refuses(value: str, tell) -> None:
    raise MissingDependency(value)


def _exits(code: int, tell) -> None:
    os._exit(code)


def _signals(number: int, tell) -> None:
    os.kill(os.getpid(), number)


def _quits(code: int, tell) -> None:
    sys.exit(code)


def _raises(text: str, tell) -> None:
    raise KeyError(text)


def _hangs(seconds: float, tell) -> None:
    time.sleep(seconds)


def _unpicklable(value: int, tell) -> object:
    return lambda: value


def test_the_value_and_what_was_told_come_back():
    told: list[int] = []
    assert call_isolated(_double, 21, 60, told.append) == Called(42, "ok")
    assert told == [0, 1, 2]


def test_an_accelbench_error_is_raised_again_here_as_it_was():
    with pytest.raises(MissingDependency, match="^onnx is needed$"):
        call_isolated(_refuses, "onnx is needed", 60)
    assert issubclass(MissingDependency, UsageError)


@pytest.mark.parametrize(
    ("function", "argument", "error"),
    [
        (_exits, 7, "the worker process died (exit code 7)"),
        (_signals, int(signal.SIGSEGV), "the worker process died (killed by SIGSEGV)"),
        (_quits, 3, "the model's code called sys.exit(3)"),
        (_raises, "x", "KeyError: 'x'"),
        (_unpicklable, 1, "its result could not be sent back: "),
    ],
)
def test_an_end_of_the_worker_is_an_error_in_one_line(function, argument, error):
    called = call_isolated(function, argument, 60)
    assert called.status == "error" and called.value is None
    assert called.error.startswith(error) and "\n" not in called.error


def test_a_hang_is_stopped_at_the_timeout():
    began = time.monotonic()
    called = call_isolated(_hangs, 600.0, 1.0)
    assert called == Called(
        None, "timeout", "no result within --timeout 1 s; the worker was stopped"
    )
    assert time.monotonic() - began < 60  # the worker's start has its own limit; not 600 s
