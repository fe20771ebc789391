"""Run one configuration in its own process, with a time limit.

Isolation is what lets a sweep survive its configurations: an OOM that poisons the CUDA
context, a segfault in a kernel, a hang in a compiler, or global switches (TF32, thread counts)
end with that process. The worker streams block timings back for the progress bar and sends
its Result at the end; the parent turns silence past the deadline into a "timeout" result and
an early death into an "error" result, and never leaves the process behind.

On Linux the workers are forked from a fork server that has imported torch and accelbench's
runner once, so a configuration does not pay for those imports again (seconds each); the server
never runs a kernel or touches a device, which is what makes forking it safe. Elsewhere, or with
ACCELBENCH_START=spawn, each worker is a fresh interpreter. Either way each result records where
its seconds went (`core.metrics.Overhead`).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Any

from ..core.explanation import ProfileRequest
from ..core.metrics import Overhead
from ..core.result import Result, RunSpec
from ..errors import UsageError
from ..levers import PLUGINS
from ..workloads import WorkloadRef
from .dist import Launch
from .measure import StopRule

__all__ = ["START", "run_isolated"]

START = "ACCELBENCH_START"  # "spawn" forces a fresh interpreter per worker (debugging, comparing)
STARTS = ("forkserver", "spawn")
# What the fork server imports once. Nothing here may initialize CUDA or MPS or start threads
# at import (a test checks): a fork copies only the forking thread, and a device context does
# not survive a fork. numpy's OpenBLAS pool is the one exception; it stops itself around forks.
# torch._dynamo too: importing it is most of torch.compile's setup (4 s a variant on a 2-core
# CPU), and it starts no thread and touches no device at import.
PRELOAD = (
    "torch",
    "torch._dynamo",
    "accelbench.engine.runner",
    "accelbench.analysis.drift",
    "accelbench.cli.main",
)
_SERVER_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Job:
    """What the worker process needs to run one configuration (it is pickled across)."""

    spec: RunSpec
    ref: WorkloadRef
    stop: StopRule
    probe: bool
    launch: Launch
    drift: bool
    sent: float  # the parent's time.time() at the call, for the worker's start-up time
    environment: dict[str, str]  # the parent's, now: a forked worker has the server's
    profile: ProfileRequest | None = None  # profile a few steps after the samples


def run_isolated(
    spec: RunSpec,
    ref: WorkloadRef,
    stop: StopRule,
    timeout: float,
    on_block: Callable[[int, float], None] | None = None,
    probe: bool = True,
    launch: Launch | None = None,
    drift: bool = False,
    profile: ProfileRequest | None = None,
) -> Result:
    """Run `spec` in a fresh process; give up after `timeout` seconds.

    With `spec.processes` > 1 the worker launches the data-parallel ranks (`launch` says where);
    the time limit covers them, and they are stopped with the worker.
    """
    called = time.perf_counter()
    result = _run_isolated(spec, ref, stop, timeout, on_block, probe, launch, drift, profile)
    wall = time.perf_counter() - called  # failed results too: a timeout costs its seconds
    return replace(result, metrics=Overhead.add(result.metrics, wall_s=wall))


def start_method() -> str:
    """How workers start here: "forkserver" on Linux unless ACCELBENCH_START says "spawn"."""
    asked = os.environ.get(START, "").strip().lower()
    if asked and asked not in STARTS:
        raise UsageError(f"${START} is {asked!r}; use one of {', '.join(STARTS)}")
    if asked == "spawn" or not sys.platform.startswith("linux"):
        return "spawn"  # fork is unsafe on macOS (system frameworks), absent on Windows
    return "forkserver"


def _context() -> Any:
    """The multiprocessing context for the next worker, with its fork server running."""
    method = start_method()
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        _start_server(context)
    return context


def _start_server(context: Any) -> None:
    """Start this process's fork server the first time (and again should it have died).

    It starts without $ACCELBENCH_LEVERS: plugin code is not ours to vouch for (it could start
    a thread or touch a device at import, and a plugin that fails to load would take the server
    down), and every worker loads the plugins its parent names now anyway."""
    from multiprocessing import forkserver

    with _SERVER_LOCK:
        context.set_forkserver_preload(list(PRELOAD))
        plugins = os.environ.pop(PLUGINS, None)
        try:
            forkserver.ensure_running()  # a cheap check once it runs
        finally:
            if plugins is not None:
                os.environ[PLUGINS] = plugins


def _run_isolated(
    spec: RunSpec,
    ref: WorkloadRef,
    stop: StopRule,
    timeout: float,
    on_block: Callable[[int, float], None] | None,
    probe: bool,
    launch: Launch | None,
    drift: bool,
    profile: ProfileRequest | None,
) -> Result:
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    launch = launch or Launch(timeout=timeout)
    job = _Job(spec, ref, stop, probe, launch, drift, time.time(), dict(os.environ), profile)
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
    begun = time.time()
    from ..errors import one_line

    with contextlib.suppress(AttributeError, PermissionError):
        os.setsid()  # lead a process group, so the parent can end everything this starts
    overhead = {"start_s": max(0.0, begun - job.sent)}
    try:
        result = _run(sender, job, overhead)
    except Exception as exc:  # even loading failed: still a result, never a lost config
        result = Result(spec=job.spec, status="error", error=one_line(exc))
    sender.send(("result", replace(result, metrics=Overhead.add(result.metrics, **overhead))))
    sender.close()


def _run(sender: Connection, job: _Job, overhead: dict[str, float]) -> Result:
    """Find the workload and device again in this process, and measure."""
    started = time.perf_counter()
    _adopt(job.environment)
    from ..devices import resolve_devices
    from ..workloads import load_workload
    from .runner import run_config

    if job.spec.processes > 1:
        from .dist import run_data_parallel

        overhead["import_s"] = time.perf_counter() - started
        return run_data_parallel(job.spec, job.ref, job.stop, job.launch)
    workload = load_workload(job.ref)
    overhead["import_s"] = time.perf_counter() - started
    device = resolve_devices(job.spec.device)[0]
    return run_config(
        job.spec,
        workload,
        device,
        job.stop,
        probe=job.probe,
        drift=job.drift,
        profile=job.profile,
        on_block=lambda i, s: sender.send(("block", i, s)),
    )


def _adopt(environment: dict[str, str]) -> None:
    """Take the parent's environment as it is now, and load the lever plugins it names.

    A forked worker has the fork server's environment, from when the server started; spawned,
    this changes nothing. Plugins already loaded are not loaded twice (levers._load_plugin)."""
    from .. import levers

    if os.environ != environment:
        os.environ.clear()
        os.environ.update(environment)
    levers._load_plugins()
