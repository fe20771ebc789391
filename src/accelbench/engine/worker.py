"""Run one configuration in its own spawned process, with a time limit.

Isolation is what lets a sweep survive its configurations: an OOM that poisons the CUDA
context, a segfault in a kernel, a hang in a compiler, or global switches (TF32, thread counts)
end with that process. The worker streams block timings back for the progress bar and sends
its Result at the end; the parent turns silence past the deadline into a "timeout" result and
an early death into an "error" result, and never leaves the process behind.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Any

from ..core.result import Result, RunSpec
from ..workloads import WorkloadRef
from .dist import Launch
from .measure import StopRule

__all__ = ["run_isolated"]


@dataclass(frozen=True)
class _Job:
    """What the worker process needs to run one configuration (it is pickled across)."""

    spec: RunSpec
    ref: WorkloadRef
    stop: StopRule
    probe: bool
    launch: Launch
    drift: bool


def run_isolated(
    spec: RunSpec,
    ref: WorkloadRef,
    stop: StopRule,
    timeout: float,
    on_block: Callable[[int, float], None] | None = None,
    probe: bool = True,
    launch: Launch | None = None,
    drift: bool = False,
) -> Result:
    """Run `spec` in a fresh process; give up after `timeout` seconds.

    With `spec.processes` > 1 the worker launches the data-parallel ranks (`launch` says where);
    the time limit covers them, and they are stopped with the worker.
    """
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    launch = launch or Launch(timeout=timeout)
    job = _Job(spec, ref, stop, probe, launch, drift)
    process = context.Process(target=_worker, args=(sender, job), daemon=False)
    process.start()
    sender.close()  # so the parent sees EOF when the child dies
    failed = Result(
        spec=spec,
        status="error",
    )
    result: Result | str | None = "interrupted"
    try:
        result = _wait(receiver, process, time.monotonic() + timeout, on_block)
    finally:
        # A worker that sent its result is exiting: let it. Any other is stopped now.
        _end(process, grace=10 if isinstance(result, Result) else 0)
    if result == "timeout":
        return replace(
            failed,
            status="timeout",
            error=f"no result within --timeout {timeout:g} s; the worker was stopped",
        )
    if result is None:
        return replace(failed, error=f"the worker process died ({_exit_reason(process.exitcode)})")
    assert isinstance(result, Result)
    return result


def _wait(
    receiver: Connection,
    process: Any,
    deadline: float,
    on_block: Callable[[int, float], None] | None,
) -> Result | str | None:
    """The worker's Result, "timeout", or None when it died without one."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout"
        if not receiver.poll(min(remaining, 0.5)):
            if not process.is_alive() and not receiver.poll():
                return None
            continue
        try:
            message = receiver.recv()
        except EOFError:
            return None
        if message[0] == "block" and on_block is not None:
            on_block(message[1], message[2])
        elif message[0] == "result":
            return message[1]


def _end(process: Any, grace: float) -> None:
    process.join(timeout=grace)
    if process.is_alive():
        process.terminate()
        process.join(timeout=5)
    # The worker leads its own process group: ending the group ends whatever it started too
    # (data-parallel ranks, compiler subprocesses), so nothing is left behind.
    with contextlib.suppress(ProcessLookupError, PermissionError, AttributeError):
        os.killpg(process.pid, signal.SIGKILL)
    process.join()


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _worker(sender: Connection, job: _Job) -> None:
    """The child: run, and send the Result whatever happens short of dying."""
    from ..errors import one_line

    with contextlib.suppress(AttributeError, PermissionError):
        os.setsid()  # lead a process group, so the parent can end everything this starts
    try:
        result = _run(sender, job)
    except Exception as exc:  # even loading failed: still a result, never a lost config
        result = Result(spec=job.spec, status="error", error=one_line(exc))
    sender.send(("result", result))
    sender.close()


def _run(sender: Connection, job: _Job) -> Result:
    """Find the workload and device again in this process, and measure."""
    from ..devices import resolve_devices
    from ..workloads import load_workload
    from .runner import run_config

    if job.spec.processes > 1:
        from .dist import run_data_parallel

        return run_data_parallel(job.spec, job.ref, job.stop, job.launch)
    device = resolve_devices(job.spec.device)[0]
    return run_config(
        job.spec,
        load_workload(job.ref),
        device,
        job.stop,
        probe=job.probe,
        drift=job.drift,
        on_block=lambda i, s: sender.send(("block", i, s)),
    )
