"""Run one configuration in its own process, with a time limit.

Isolation is what lets a sweep survive its configurations: an OOM that poisons the CUDA
context, a segfault in a kernel, a hang in a compiler, or global switches (TF32, thread counts)
end with that process. The worker streams block timings back for the progress bar and sends
its Result at the end; the parent turns silence past the deadline into a "timeout" result and
an early death into an "error" result, and never leaves the process behind. The deadline runs
from the worker's "ready" (its imports done), under a start-up limit of its own, so a loaded
machine's slow start does not eat a configuration's time. A worker whose parent dies (kill -9
cannot be caught) ends itself and everything it started: the parent's end of the pipe closes.

On Linux the workers are forked from a fork server that has imported torch and accelbench's
runner once, so a configuration does not pay for those imports again (seconds each); the server
never runs a kernel or touches a device, which is what makes forking it safe. Elsewhere, or with
ACCELBENCH_START=spawn, each worker is a fresh interpreter. Either way each result records where
its seconds went (`engine.facts.Overhead`).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import pickle
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Any

from ..analysis.explanation import ProfileRequest
from ..analysis.facts import LEFT_RUNNING
from ..core.result import Result, RunSpec
from ..core.vocab import Status
from ..errors import AccelbenchError, UsageError, WorkloadError, one_line
from ..levers import NO_ENTRY_POINTS, PLUGINS
from ..store.base import DB_VARIABLE
from ..workloads import Workload, WorkloadRef, load_workload
from ..workloads.described import WorkloadFacts, described
from .dist import Launch
from .facts import Overhead
from .measure import StopRule
from .reaper import Reaper
from .rounds import Round

__all__ = [
    "COMPILE_THREADS",
    "START",
    "Called",
    "call_isolated",
    "compile_in_process",
    "describe_isolated",
    "planning_workload",
    "run_isolated",
    "worker_environment",
]

COMPILE_THREADS = "TORCHINDUCTOR_COMPILE_THREADS"  # Inductor's compile pool, 1: none
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
# A worker's interpreter start and imports are not the configuration's: they have their own
# limit, this or the configuration's --timeout, whichever is longer.
START_LIMIT_S = 60.0
PARENT_POLL_S = 0.5  # how often a worker looks for its parent where a closed pipe cannot say
_PR_SET_PDEATHSIG = 1  # prctl option (linux/prctl.h): a signal for when the parent dies


@dataclass(frozen=True, kw_only=True)  # eleven fields: by name, never by position
class _Job:
    """What the worker process needs to run one configuration (it is pickled across)."""

    spec: RunSpec
    ref: WorkloadRef
    stop: StopRule
    probe: bool
    launch: Launch
    drift: bool
    # the parent's time.monotonic() at the call, for the worker's start-up time: one clock for
    # every process of the host (Linux's and macOS's CLOCK_MONOTONIC, Windows' tick count), which
    # the wall clock is not (it jumps: a start once read a year)
    sent: float
    environment: dict[str, str]  # the parent's, now: a forked worker has the server's
    parent: int  # the parent's pid: a forked worker's own parent is the fork server
    profile: ProfileRequest | None = None  # profile a few steps after the samples
    latency: bool = False  # time inference at batch 1 too, one step a sample
    process: Round | None = None  # which of the configuration's processes (engine/rounds)
    cwd: str = ""  # the parent's working directory, now: the fork server's may be another


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
    latency: bool = False,
    process: Round | None = None,
) -> Result:
    """Run `spec` in a fresh process; give up `timeout` seconds after it is ready (its
    interpreter started and imports done; the start itself may take max(START_LIMIT_S, timeout)).

    With `spec.processes` > 1 the worker launches the data-parallel ranks (`launch` says where);
    the time limit covers them, and they are stopped with the worker. With `latency`, an
    inference configuration is timed at batch 1 too (engine/runner's `run_config`). `process`
    says which of the configuration's processes this one is (None: its only one).
    """
    called = time.perf_counter()
    result = _run_isolated(
        spec, ref, stop, timeout, on_block, probe, launch, drift, profile, latency, process
    )
    wall = time.perf_counter() - called  # failed results too: a timeout costs its seconds
    return replace(result, metrics=Overhead.add(result.metrics, wall_s=wall))


@dataclass(frozen=True)
class _Describe:
    """What a worker needs to load a workload and describe it (pickled across)."""

    ref: WorkloadRef
    environment: dict[str, str]
    parent: int
    cwd: str
    check: bool = False  # run the workload's own check (a --model's forward) too


def planning_workload(ref: WorkloadRef, timeout: float, check: bool = False) -> Workload:
    """The workload the command plans with: a built-in as it is (accelbench's own code), a
    `--model` as a worker described it (`describe_isolated`; with `check`, once it passed its
    own check: the model takes its inputs)."""
    if not ref.custom:
        return load_workload(ref)
    return described(describe_isolated(ref, timeout, check))


def describe_isolated(ref: WorkloadRef, timeout: float, check: bool = False) -> WorkloadFacts:
    """Load `ref` (a `--model`) in a worker and return what planning needs of it: importing
    its file and calling its factory run the user's code, which may raise, exit, fork, hang or
    change the directory, and none of it may reach the command. WorkloadError in one line
    when it does not load (or, with `check`, fails its own check: `Workload.check`); what it
    left running ends with it."""
    job = _Describe(ref, worker_environment(), os.getpid(), os.getcwd(), check)
    ended = _isolated(_describe_worker, job, timeout)
    if isinstance(ended.sent, WorkloadFacts):
        return ended.sent
    if isinstance(ended.sent, str):
        raise WorkloadError(ended.sent)
    why = _failure(ended.outcome, timeout, ended.exitcode)
    raise WorkloadError(f"loading {ref.name} failed: {why}")


def _describe_worker(sender: Connection, job: _Describe) -> None:
    """The child: load the workload, and send its facts or, in one line, why not."""
    with contextlib.suppress(AttributeError, PermissionError):
        os.setsid()
    _die_with_parent(sender, job.parent)
    _adopt(job.environment, job.cwd)
    from ..workloads.described import facts_of

    _send(sender, ("ready",))
    try:
        workload = load_workload(job.ref)
        if job.check:
            workload.check()
        told: WorkloadFacts | str = facts_of(workload)
    except AccelbenchError as exc:  # said already, in one line
        told = str(exc)
    except SystemExit as exc:  # the model's code ended its program: its error, not ours
        told = f"{job.ref.name}: the model's code called sys.exit({exc.code!r})"
    except BaseException as exc:
        told = f"{job.ref.name}: {one_line(exc)}"
    _send(sender, ("result", told))
    sender.close()


@dataclass(frozen=True)
class Called:
    """What a call in a worker (`call_isolated`) came to: its value with status "ok"; or
    status "error" or "timeout", no value and, in one line, why; and what it left running
    that was stopped ("pid N name" each)."""

    value: Any
    status: Status
    error: str = ""
    left_running: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Call:
    """A function of the caller's and its argument, for a worker (pickled across; the
    function by its module and name)."""

    function: Callable[[Any, Callable[[Any], None]], Any]
    argument: Any
    environment: dict[str, str]
    parent: int
    cwd: str


@dataclass(frozen=True)
class _Raised:
    error: AccelbenchError  # said in one line: the caller raises it again


def call_isolated(
    function: Callable[[Any, Callable[[Any], None]], Any],
    argument: Any,
    timeout: float,
    on_tell: Callable[[Any], None] | None = None,
) -> Called:
    """Run `function(argument, tell)` in a worker process, as `run` runs a configuration:
    it leads its own process group, has `timeout` seconds from its start (its imports have
    their own limit, START_LIMIT_S), and whatever it started ends with it. What it passes to
    `tell` reaches `on_tell` here as it goes (progress); its value comes back pickled.

    An AccelbenchError it raises is raised here (bad input, one line). Any other exception,
    sys.exit, a death (a signal, os._exit) or silence past the deadline is a Called with
    status "error" or "timeout" and a line saying which: never this process's end."""
    job = _Call(function, argument, worker_environment(), os.getpid(), os.getcwd())
    ended = _isolated(_call_worker, job, timeout, on_tell=on_tell)
    left, sent = tuple(ended.stopped), ended.sent
    if isinstance(sent, _Raised):
        raise sent.error
    if isinstance(sent, _Returned):
        return Called(sent.value, "ok", left_running=left)
    if isinstance(sent, str):
        return Called(None, "error", sent, left)
    status: Status = "error" if ended.outcome is None else "timeout"
    return Called(None, status, _failure(ended.outcome, timeout, ended.exitcode), left)


@dataclass(frozen=True)
class _Returned:
    value: Any  # what the called function returned


def _call_worker(sender: Connection, job: _Call) -> None:
    """The child: call, and send what came of it (or why nothing did) in a picklable form."""
    with contextlib.suppress(AttributeError, PermissionError):
        os.setsid()  # lead a process group, so the parent can end everything this starts
    _die_with_parent(sender, job.parent)
    _adopt(job.environment, job.cwd)
    _send(sender, ("ready",))  # the time limit starts now: the user's code next
    try:
        sent: Any = _Returned(job.function(job.argument, lambda v: _send(sender, ("tell", v))))
    except AccelbenchError as exc:
        sent = _Raised(_ours(exc))
    except SystemExit as exc:  # the model's code ended its program: its error, not ours
        sent = f"the model's code called sys.exit({exc.code!r})"
    except Exception as exc:
        sent = one_line(exc)
    try:
        pickle.dumps(sent)
    except Exception as exc:  # sent as it is, it would kill this worker with a traceback
        sent = f"its result could not be sent back: {one_line(exc)}"
    _send(sender, ("result", sent))
    sender.close()


def _ours(error: AccelbenchError) -> AccelbenchError:
    """`error` as a class of accelbench.errors (a plugin's own subclass may not unpickle in
    the parent), its one line kept."""
    if type(error).__module__ == AccelbenchError.__module__:
        return error
    kind = next(k for k in type(error).__mro__ if k.__module__ == AccelbenchError.__module__)
    return kind(str(error))  # type: ignore[no-any-return]


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

    It starts without plugins ($ACCELBENCH_LEVERS, installed entry points): plugin code is not
    ours to vouch for (it could start a thread or touch a device at import, and a plugin that
    fails to load would take the server down), and every worker loads the plugins now anyway."""
    from multiprocessing import forkserver

    with _SERVER_LOCK:
        context.set_forkserver_preload(list(PRELOAD))
        plugins = os.environ.pop(PLUGINS, None)
        os.environ[NO_ENTRY_POINTS] = "1"
        try:
            forkserver.ensure_running()  # a cheap check once it runs
        finally:
            os.environ.pop(NO_ENTRY_POINTS, None)
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
    latency: bool,
    process: Round | None,
) -> Result:
    job = _Job(
        spec=spec,
        ref=ref,
        stop=stop,
        probe=probe,
        launch=launch or Launch(timeout=timeout),
        drift=drift,
        sent=time.monotonic(),
        environment=worker_environment(),
        parent=os.getpid(),
        profile=profile,
        latency=latency,
        process=process,
        cwd=os.getcwd(),
    )
    ended = _isolated(_worker, job, timeout, on_block)
    outcome = ended.sent
    if not isinstance(outcome, Result):
        status: Status = "error" if ended.outcome is None else "timeout"
        error = _failure(ended.outcome, timeout, ended.exitcode)
        outcome = Result(spec=spec, status=status, error=error)
    if ended.stopped:
        outcome = replace(outcome, metrics={**outcome.metrics, LEFT_RUNNING: ended.stopped})
    return outcome


@dataclass(frozen=True)
class _Ended:
    """How a worker ended: what it sent as its result, if it sent one; else "timeout", "not
    started" or None (it died); its exit code; what it left running that was stopped."""

    sent: Any
    outcome: str | None
    exitcode: int | None
    stopped: list[str]


def _isolated(
    target: Callable[[Connection, Any], None],
    job: Any,
    timeout: float,
    on_block: Callable[[int, float], None] | None = None,
    on_tell: Callable[[Any], None] | None = None,
) -> _Ended:
    """Run `target(sender, job)` in a worker process and wait for what it sends."""
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    with Reaper() as reaper:  # whatever the worker leaves running ends with it
        worker = context.Process(target=target, args=(sender, job), daemon=False)
        worker.start()
        sender.close()  # so the parent sees EOF when the child dies
        outcome: _Sent | str | None = "interrupted"
        try:
            outcome = _wait(receiver, worker, timeout, on_block, on_tell)
        finally:
            # A worker that sent its result is exiting: let it. Any other is stopped now.
            _end(worker, grace=10 if isinstance(outcome, _Sent) else 0)
    if isinstance(outcome, _Sent):
        return _Ended(outcome.payload, None, worker.exitcode, reaper.stopped)
    return _Ended(None, outcome, worker.exitcode, reaper.stopped)


@dataclass(frozen=True)
class _Sent:
    payload: Any  # what the worker sent as its result


def _failure(outcome: str | None, timeout: float, exitcode: int | None) -> str:
    """Why there is no result: a worker that died (None), or one that ran out of time."""
    if outcome is None:
        return f"the worker process died ({_exit_reason(exitcode)})"
    if outcome == "not started":
        return (
            f"the worker did not start within {max(START_LIMIT_S, timeout):g} s (its "
            "interpreter and imports); it was stopped"
        )
    return f"no result within --timeout {timeout:g} s; the worker was stopped"


def _wait(
    receiver: Connection,
    process: Any,
    timeout: float,
    on_block: Callable[[int, float], None] | None,
    on_tell: Callable[[Any], None] | None = None,
) -> _Sent | str | None:
    """What the worker sent as its result; "timeout", or "not started" when it was not even
    ready in time; or None when it died without one. The clock starts at its "ready"."""
    deadline, ready = time.monotonic() + max(START_LIMIT_S, timeout), False
    while True:
        remaining = deadline - time.monotonic()
        # past the deadline, what is already in the pipe is still read: a result that arrived
        # while this process could not look (stopped by SIGSTOP, say) is the worker's result
        if not receiver.poll(max(0.0, min(remaining, 0.5))):
            if remaining <= 0:
                return "timeout" if ready else "not started"
            if not process.is_alive() and not receiver.poll():
                return None
            continue
        try:
            message = receiver.recv()
        except EOFError:
            return None
        if message[0] == "ready":
            deadline, ready = time.monotonic() + timeout, True
        elif message[0] == "block" and on_block is not None:
            on_block(message[1], message[2])
        elif message[0] == "tell" and on_tell is not None:
            on_tell(message[1])
        elif message[0] == "result":
            return _Sent(message[1])


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
    begun = time.monotonic()

    with contextlib.suppress(AttributeError, PermissionError):
        os.setsid()  # lead a process group, so the parent can end everything this starts
    _die_with_parent(sender, job.parent)
    overhead = {"start_s": max(0.0, begun - job.sent)}
    try:
        result = _run(sender, job, overhead)
    except SystemExit as exc:  # the model's code ended its program: the configuration's error
        why = f"the model's code called sys.exit({exc.code!r})"
        result = Result(spec=job.spec, status="error", error=why)
    except Exception as exc:  # even loading failed: still a result, never a lost config
        result = Result(spec=job.spec, status="error", error=one_line(exc))
    _send(sender, ("result", replace(result, metrics=Overhead.add(result.metrics, **overhead))))
    sender.close()


def _run(sender: Connection, job: _Job, overhead: dict[str, float]) -> Result:
    """Find the workload and device again in this process, and measure."""
    started = time.perf_counter()
    _adopt(job.environment, job.cwd)
    compile_in_process()
    from ..devices import resolve_devices
    from .runner import run_config

    _send(sender, ("ready",))  # the configuration's time limit starts now: the user's code next
    if job.spec.processes > 1:
        from .dist import run_data_parallel

        overhead["import_s"] = time.perf_counter() - started
        stop = job.process.stop if job.process is not None else job.stop
        return run_data_parallel(job.spec, job.ref, stop, job.launch)
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
        latency=job.latency,
        on_block=lambda i, s: _send(sender, ("block", i, s)),
        process=job.process,
    )


def _send(sender: Connection, message: tuple[Any, ...]) -> None:
    """Send to the parent; if it is gone, nobody will read this or anything after: end quietly
    (a BrokenPipeError traceback on the terminal of a killed sweep helps no one)."""
    try:
        sender.send(message)
    except (BrokenPipeError, ConnectionResetError):
        _end_orphan()


def _die_with_parent(sender: Connection, parent: int) -> None:
    """End this worker and all it started when its parent dies, however it dies.

    The parent ends its worker itself, unless it is killed with SIGKILL. Then the kernel's
    parent-death signal (Linux) covers a spawned worker, whose parent it is, but not a forked
    one: its parent is the fork server, which the worker keeps alive by holding the server's
    pipe. So a thread also watches the parent: its end of our pipe closes when it dies (a zombie
    parent still has a pid), and its pid is looked at too, where a closed pipe cannot be seen."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    # Our own copy of the pipe's end: the watch must outlive `sender`'s close at the end.
    watched = os.dup(sender.fileno())
    threading.Thread(target=_watch, args=(watched, parent), daemon=True).start()


def _watch(fd: int, parent: int) -> None:
    """Return never: end this worker once its parent is gone."""
    poller = select.poll() if hasattr(select, "poll") else None
    if poller is not None:
        poller.register(fd, 0)  # no events asked: POLLERR (no reader left) is reported anyway
    while True:
        if poller is None:
            time.sleep(PARENT_POLL_S)
        elif poller.poll(PARENT_POLL_S * 1000):
            break  # the parent's end of the pipe closed: it has died
        if not _alive(parent):
            break
    _end_orphan()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone; or gone, its pid now another's
        return False
    return True


def _end_orphan() -> None:
    """The parent is gone: end this worker's process group (it and whatever it started)."""
    if os.getpgrp() == os.getpid():  # setsid took: the group is ours alone
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def compile_in_process() -> None:
    """Have torch.compile compile in this process, unless the user's environment names a count.

    By default Inductor compiles in a pool of subprocesses that outlive the compile: on an
    H200 they used 1.3 cores during a compiled configuration's timed samples, which made the
    verdict "undetermined"; compiling in-process took 1.2 s instead of 10.4 s for the first
    step of seed-cnn and left the samples alone (BENCHMARKS.md, batch O). The config is set,
    not only the variable, because the fork server read the variable when it imported torch;
    the variable is set for the processes a data-parallel launch starts."""
    if COMPILE_THREADS in os.environ:
        return
    os.environ[COMPILE_THREADS] = "1"
    import torch._inductor.config as inductor

    inductor.compile_threads = 1


def worker_environment() -> dict[str, str]:
    """The environment a worker runs the user's code in: this process's, less the results
    store's location (a server's URL may hold its password, which user code has no need of)."""
    return {name: value for name, value in os.environ.items() if name != DB_VARIABLE}


def _adopt(environment: dict[str, str], cwd: str = "") -> None:
    """Take the parent's environment and directory as they are now, and load the lever
    plugins it names.

    A forked worker has the fork server's environment, from when the server started; spawned,
    this changes nothing. Plugins already loaded are not loaded twice (levers._load_plugin)."""
    from .. import levers

    if os.environ != environment:
        os.environ.clear()
        os.environ.update(environment)
    if cwd:
        os.chdir(cwd)
    levers._load_plugins()
