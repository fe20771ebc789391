"""Benchmark sweeps: a typed request becomes a checked plan, then stored results.

Planning loads every workload and resolves every device first, so a bad name, a custom model
that does not import or rejects its input shape, or an unavailable device fails in one line
before anything is measured or stored. `accelbench run` and `accelbench.benchmark` both come here.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..analysis.explanation import Explanation, ProfileRequest
from ..analysis.facts import QUICK, Rounds
from ..analysis.metrics import Analyzer
from ..analysis.trust import Caveat, Trust, assess, with_trust
from ..backends import check_installed, unsupported
from ..core.levels import DEFAULT_POLICY, QUICK_ROUNDS, QUICK_SECONDS, QUICK_STEPS, RoundPolicy
from ..core.limits import count_problem, seconds_problem
from ..core.modes import DEFAULT_MODE, all_modes, check_mode_args, check_options_apply, mode_names
from ..core.result import Result, RunSpec, Value, machine_of
from ..core.vocab import BACKENDS, DEFAULT_WORKLOAD
from ..devices import Device, resolve_devices
from ..devices.fingerprint import fingerprint
from ..devices.processes import identity, running
from ..engine.dist import Launch
from ..engine.facts import (
    DEVICE_MEMORY,
    SCALING_EFFICIENCY,
    SCALING_UNAVAILABLE,
    SINGLE_PROCESS_SAMPLES_PER_S,
)
from ..engine.rounds import (
    Round,
    first_rounds,
    merge,
    more_rounds,
    round_stop,
)
from ..engine.sweep import Config, LeverValues, Progress, Sweep, run_interleaved
from ..engine.track import progress_bar
from ..engine.worker import START_LIMIT_S, planning_workload, run_isolated
from ..errors import StoreError, UsageError, one_line
from ..levers import all_levers, find_lever, label
from ..store.db import Filters, Store
from ..workloads import Workload, WorkloadRef
from . import inputs

__all__ = [
    "DEFAULT_WORKLOAD",
    "BenchmarkRequest",
    "Plan",
    "benchmark",
    "open_store",
    "plan",
    "run_plan",
    "resumable",
    "resumed",
    "run_stored",
]


@dataclass(frozen=True, kw_only=True)
class BenchmarkRequest:
    """What to measure: each combination of the lists (and of the levers' values) is one
    configuration, run in its own process. Precision is a lever like the others:
    `levers={"precision": ("fp32", "bf16")}`.

    A request checks itself as it is made (UsageError, one line naming the valid choices):
    its sizes and counts, its levers' names and values, the options that exclude each other.
    What needs the machine (devices, installed backends, the workloads' own sizes) is checked
    by `plan`."""

    workloads: tuple[WorkloadRef, ...] = ()  # none: DEFAULT_WORKLOAD
    devices: str = "all"  # comma-separated names such as "cpu,cuda:0", or "all"
    modes: tuple[str, ...] = (DEFAULT_MODE,)
    batch_sizes: tuple[int | None, ...] = (None,)  # None: the workload's own
    backends: tuple[str, ...] = ("torch",)  # "onnxruntime" means each provider of the device
    # lever name -> the values to try (a lever not named runs its default); "processes"
    # counts processes per node.
    levers: Mapping[str, tuple[Value, ...]] = field(default_factory=dict)
    epochs: int | None = None  # time exactly this many its; else the workload's or max_time
    max_time: float | None = None  # the adaptive stop rule's budget in seconds
    warmup: int = 1
    timeout: float = 900.0  # per configuration
    verdict: bool = True  # probe a smaller batch for the bottleneck verdict
    latency: bool = True  # time inference at batch 1 too, one step a sample (p50/p90/p99)
    max_batch: bool = False  # search each configuration's largest batch instead
    nodes: int = 1
    node_rank: int = 0
    rdzv_endpoint: str = ""  # HOST:PORT where the nodes meet, with nodes > 1
    profile: ProfileRequest | None = None  # profile each configuration after its samples
    # mode option name -> the values to try, for the modes that declare it (core/modes'
    # Mode.options); an option not named takes its default (the workload's, where it says so).
    mode_args: Mapping[str, tuple[Value, ...]] = field(default_factory=dict)
    # Processes per configuration (engine/rounds): a fixed count, or None for adaptive
    # (DEFAULT_POLICY's least first, then as many as their spread asks, up to max_rounds).
    rounds: int | None = None
    max_rounds: int | None = None  # None: DEFAULT_POLICY's
    min_gap: float = 0.0  # seconds between the starts of a configuration's processes, at least
    # A first look (`run --quick`): QUICK_ROUNDS processes, QUICK_SECONDS of timing in all
    # (where rounds, max_rounds, max_time or epochs leave them unset), one step an it, no
    # verdict probe, no latency; each result carries the caveat "quick".
    quick: bool = False

    def __post_init__(self) -> None:
        _take_library_forms(self)
        _check_counts(self)
        _check_levers(self.levers)
        _check_mode_args(self.modes, self.mode_args)
        _check_together(self)


def _take_library_forms(request: BenchmarkRequest) -> None:
    """A name or a sequence where a list is meant, a workload by name (workflows/inputs), in
    the request's own types; the frozen request is set once, here, as it is made."""
    taken: dict[str, object] = {
        "workloads": inputs.workload_refs("workloads", request.workloads),
        "devices": inputs.device_names("devices", request.devices),
        "modes": inputs.names("modes", request.modes),
        "backends": inputs.names("backends", request.backends),
        "levers": _lever_values(request.levers),
        "mode_args": _lever_values(request.mode_args, "mode_args", "option"),
        "batch_sizes": inputs.sizes("batch_sizes", request.batch_sizes),
    }
    for name in ("modes", "backends"):
        if not taken[name]:  # no configuration at all: a sweep of nothing
            raise UsageError(f"{name} takes at least one name, not {getattr(request, name)!r}")
    for name, value in taken.items():
        object.__setattr__(request, name, value)


def _lever_values(
    levers: object, field: str = "levers", what: str = "lever"
) -> dict[str, tuple[Value, ...]]:
    """A lever's (or a mode option's) values: one value, or a sequence of values to try."""
    if not isinstance(levers, Mapping):
        raise UsageError(f"{field} takes a mapping of {what} name to values, not {levers!r}")
    return {name: inputs.settable(values) for name, values in levers.items()}


def _check_counts(request: BenchmarkRequest) -> None:
    """Sizes, counts and seconds: each within its range (None where the field allows it)."""
    counts: list[tuple[str, Any, int]] = [("batch_sizes", v, 1) for v in request.batch_sizes]
    counts += [(name, getattr(request, name), 1) for name in ("epochs", "rounds", "max_rounds")]
    counts += [("nodes", request.nodes, 1), ("warmup", request.warmup, 0)]
    counts += [("node_rank", request.node_rank, 0)]
    for name, value, least in counts:
        problem = None if value is None else count_problem(value, least)
        if problem:
            raise UsageError(f"{name} {problem}, not {value!r}")
    for name, value in (("timeout", request.timeout), ("max_time", request.max_time)):
        problem = None if value is None else seconds_problem(value)
        if problem:
            raise UsageError(f"{name} {problem}, not {value!r}")


def _check_levers(levers: Mapping[str, tuple[Value, ...]]) -> None:
    """Each lever named is one, and each of its values one it can take (library callers skip
    the CLI's parsing)."""
    names = [lever.name for lever in all_levers()]
    unknown = sorted(set(levers) - set(names))
    if unknown:
        raise UsageError(f"unknown lever {unknown[0]!r}; valid: {', '.join(names)}")
    for name, values in levers.items():
        for value in values:
            try:
                find_lever(name).check(value)
            except ValueError as exc:
                raise UsageError(f"{name}: {exc}") from None


def _check_mode_args(modes: tuple[str, ...], given: Mapping[str, tuple[Value, ...]]) -> None:
    """Each mode option named is one of a mode asked for, each value one it takes (library
    callers skip the CLI's parsing)."""
    check_options_apply(given, modes)
    for name, values in given.items():
        owner = next(
            m for m in all_modes() if m.name in modes and any(o.name == name for o in m.options)
        )
        if not isinstance(values, tuple) or not values:
            raise UsageError(f"{name} takes a tuple of values, not {values!r}")
        for value in values:
            check_mode_args(owner, {name: value})


def _check_together(request: BenchmarkRequest) -> None:
    """The options that exclude or need each other."""
    if request.max_batch and request.batch_sizes != (None,):
        raise UsageError("--max-batch searches the batch size itself; drop --batch-sizes")
    if request.rounds is not None and request.max_rounds is not None:
        raise UsageError(
            f"--rounds {request.rounds} fixes the count; --max-rounds {request.max_rounds} caps "
            "an adaptive one: give one of them"
        )
    if request.nodes > 1 and not request.rdzv_endpoint:
        raise UsageError("--nnodes above 1 needs --rdzv-endpoint HOST:PORT where the nodes meet")
    if request.node_rank >= request.nodes:
        raise UsageError(f"--node-rank {request.node_rank} is not below --nnodes {request.nodes}")


def quickened(request: BenchmarkRequest) -> tuple[BenchmarkRequest, str]:
    """The request as a quick run measures it, and its caveat saying what that cut (the
    request's own counts and seconds win over the quick ones); ("" for a full run)."""
    if not request.quick:
        return request, ""
    rounds = request.rounds
    if rounds is None and request.max_rounds is None:  # a process times one it at least
        rounds = min(QUICK_ROUNDS, request.epochs or QUICK_ROUNDS)
    max_time = request.max_time
    if max_time is None and request.epochs is None:
        max_time = QUICK_SECONDS
    quick = replace(request, rounds=rounds, max_time=max_time, verdict=False, latency=False)
    processes = f"{rounds} processes" if rounds else f"up to {request.max_rounds} processes"
    timing = f"{max_time:g} s of timing in all" if max_time else f"{request.epochs} timed its"
    caveat = (
        f"quick (--quick): {processes}, {timing}, {QUICK_STEPS} step an it, no bottleneck "
        "verdict, no batch-1 latency: a first look, not a figure to sign; run without --quick "
        "for that"
    )
    return quick, caveat


@dataclass(frozen=True)
class Plan:
    sweep: Sweep
    configs: Sequence[Config]
    workloads: dict[WorkloadRef, Workload]
    devices: dict[str, Device]
    timeout: float
    verdict: bool = True  # probe a smaller batch for the bottleneck verdict
    max_batch: bool = False  # search each configuration's largest batch instead
    launch: Launch = Launch()  # where data-parallel processes run
    profile: ProfileRequest | None = None
    latency: bool = True  # time inference at batch 1 too, one step a sample
    policy: RoundPolicy = DEFAULT_POLICY  # how many processes measure each configuration
    run_id: str = ""  # this run's own sweep id (`new_run_id`), or the one --resume goes on with
    quick: str = ""  # a quick run's caveat (`quickened`); "" for a full run

    @property
    def id(self) -> str:
        """The sweep id its results are stored under."""
        return self.run_id or self.sweep.id


def new_run_id(key: str) -> str:
    """A new run's sweep id: the options' key (`Sweep.id`, the same for the same command), then
    a suffix of its own, so the same command run twice is two runs that the report and
    `compare` show side by side; `--resume` finds the newest run of the key (`resumed`)."""
    return f"{key}-{uuid.uuid4().hex[:6]}"


def resumed(plan: Plan, store: Store) -> Plan:
    """`plan` going on with the newest stored run of its options (one stored before runs had
    ids of their own included). Where none is stored, the run's id is the options' key itself,
    not a new one: resumers started at once must find one sweep to split between them."""
    newest = store.results(Filters(runs_of=plan.sweep.id), limit=1)
    return replace(plan, run_id=newest[0].sweep if newest else plan.sweep.id)


def plan(request: BenchmarkRequest) -> Plan:
    """Every configuration of the request, with its workloads loaded and devices resolved."""
    request, quick = quickened(request)
    _check_words(request)
    launch = _launch(request)
    # a name given twice is one configuration, for the library as for the CLI
    refs = list(dict.fromkeys(request.workloads)) or [WorkloadRef(DEFAULT_WORKLOAD)]
    # a --model is loaded in a worker: the command never runs the user's code
    workloads = {ref: planning_workload(ref, request.timeout) for ref in refs}
    devices = resolve_devices(request.devices)
    sweep = Sweep(
        workloads=tuple(refs),
        devices=tuple(d.name for d in devices),
        modes=request.modes,
        batch_sizes=request.batch_sizes,
        levers=_sweep_levers(request),
        backends=request.backends,
        blocks=request.epochs,
        max_time=request.max_time,
        warmup=request.warmup,
        mode_args=tuple((name, tuple(values)) for name, values in request.mode_args.items()),
        steps_per_block=QUICK_STEPS if request.quick else None,
    )
    configs = sweep.configs([workloads[r] for r in refs], devices)
    profile = _checked_profile(request.profile, configs)
    return Plan(
        sweep,
        configs,
        workloads,
        {d.name: d for d in devices},
        request.timeout,
        verdict=request.verdict and not request.max_batch,
        max_batch=request.max_batch,
        launch=launch,
        profile=profile,
        latency=request.latency and not request.max_batch,
        policy=_policy(request, configs),
        run_id=new_run_id(sweep.id),
        quick=quick,
    )


def _policy(request: BenchmarkRequest, configs: Sequence[Config]) -> RoundPolicy:
    """The processes per configuration, checked against the configurations' timed its."""
    policy = RoundPolicy(
        fixed=request.rounds,
        most=request.max_rounds or DEFAULT_POLICY.most,
        min_gap=request.min_gap,
    )
    fewest = min((c.stop.blocks for c in configs if c.stop.blocks is not None), default=None)
    if request.rounds is not None and fewest is not None and fewest < request.rounds:
        raise UsageError(
            f"--rounds {request.rounds} cannot share {fewest} timed its: each process times "
            f"one at least; give --blocks {request.rounds} or more, or fewer --rounds"
        )
    return policy


def _checked_profile(
    profile: ProfileRequest | None, configs: Sequence[Config]
) -> ProfileRequest | None:
    """The profile request with its trace path made absolute (the worker writes it), after
    checking what a profile cannot do, before anything is measured."""
    if profile is None:
        return None
    if any(c.spec.processes > 1 for c in configs):
        raise UsageError(
            "--profile profiles one process; it cannot run with --nproc-per-node above 1"
        )
    if not profile.trace:
        return profile
    if len(configs) != 1:
        raise UsageError(
            f"--trace writes one configuration's trace; these options make {len(configs)}"
        )
    return replace(profile, trace=str(_writable(Path(profile.trace))))


def _writable(path: Path) -> Path:
    """`path` made absolute, if a file can be written there (its folder exists)."""
    path = path.expanduser().resolve()
    if path.is_dir():
        raise UsageError(f"--trace {path}: is a directory; give a file such as trace.json")
    if not path.parent.is_dir():
        raise UsageError(f"--trace {path}: no such directory: {path.parent}")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"--trace {path}: cannot be written")
    return path


def _check_words(request: BenchmarkRequest) -> None:
    """The library's callers skip the CLI's parsing: check their words here, in one line."""
    for option, given, valid in (
        ("modes", request.modes, mode_names()),
        ("backends", request.backends, BACKENDS),
    ):
        unknown = [value for value in given if value not in valid]
        if unknown:
            # in the words of the command's --modes and --backends
            raise UsageError(
                f"{option}: invalid value {unknown[0]!r}; valid: {', '.join(valid)}"
            )
    check_installed(request.backends)  # before anything is measured


def _sweep_levers(request: BenchmarkRequest) -> LeverValues:
    """Each lever's values (the request checked them), as the sweep multiplies them."""
    out = []
    for lever in all_levers():
        values = tuple(request.levers.get(lever.name, (lever.default,)))
        out.append((lever.name, lever.sweep_values(values, request.nodes)))
    return tuple(out)


def _launch(request: BenchmarkRequest) -> Launch:
    return Launch(
        nodes=request.nodes,
        node_rank=request.node_rank,
        endpoint=request.rdzv_endpoint,
        timeout=request.timeout,
    )


def run_plan(
    plan: Plan,
    store: Store,
    resume: bool = False,
    quiet: bool = False,
    on_elsewhere: Callable[[RunSpec, str], None] | None = None,
) -> list[Result]:
    """Run every configuration's processes (engine/rounds), interleaved pass by pass, saving
    each configuration's result as each of its processes lands; with `resume`, go on from
    what the newest run of these options stored (`resumed`; a configuration at the process it
    had reached), claiming each configuration first, so that resumers running at once split
    the work: one another run measures is left to it (`on_elsewhere(spec, holder)`), one a
    dead run held is taken over."""
    if resume:
        plan = resumed(plan, store)
    stored = resumable(plan, store) if resume else {}
    todo = [p for p in (Progress(c, stored.get(c.spec)) for c in plan.configs) if not p.complete]
    of_sweep = store.results(Filters(sweep=plan.id))
    claims = _Claims(store, plan.id, _stale_after(plan)) if resume else None
    measure = _Measure(plan, store, Analyzer(store.calibrations()))
    # Single-process results of this sweep, the baseline of the data-parallel efficiency.
    measure.singles.update({r.spec: r for r in of_sweep if resume})
    with progress_bar(disable=quiet) as bar:
        overall = bar.add_task("processes", total=sum(_planned(plan, p) for p in todo))

        def run(progress: Progress, pass_no: int) -> Result | None:
            if claims is not None and not claims.take(progress):
                if progress.elsewhere and on_elsewhere is not None:
                    on_elsewhere(progress.config.spec, progress.elsewhere)
                return progress.result
            spec = progress.config.spec
            task = bar.add_task(f"{spec.workload} on {spec.device}: {label(spec)}", total=None)
            result = measure(progress, pass_no, lambda i, s: bar.advance(task))
            bar.remove_task(task)
            bar.update(overall, advance=1, total=sum(_planned(plan, p) for p in todo))
            rounds = result.facts.get(Rounds)
            if claims is not None and rounds and rounds.complete:
                claims.release(spec)
            return result

        run_interleaved(todo, run, _next_pass(of_sweep), min_gap=plan.policy.min_gap)
    return [p.result for p in todo if p.result is not None and not p.elsewhere]


@dataclass
class _Measure:
    """One more process of a configuration: measured, analyzed, caveated and stored."""

    plan: Plan
    store: Store
    analyze: Analyzer
    singles: dict[RunSpec, Result] = field(default_factory=dict)

    def __call__(
        self, progress: Progress, pass_no: int, on_block: Callable[[int, float], None]
    ) -> Result:
        result = _next_process(self.plan, progress, pass_no, on_block)
        if self.plan.quick:  # before the caveats are assessed, which say it
            result = replace(result, metrics={**result.metrics, QUICK.key: self.plan.quick})
        try:
            result = self._analyzed(result)
        except Exception as exc:  # the measurement stands: what failed after it is said with it
            result = _unanalyzed(result, exc)
        return self.store.save(replace(result, sweep=self.plan.id))

    def _analyzed(self, result: Result) -> Result:
        """The measured result with what is derived from it: the analysis, the scaling and
        the caveats."""
        spec = result.spec
        try:
            earlier = _earlier_runs(self.store, result, self.plan.id)
        except StoreError:
            # The store is away (a server restarting): what was measured is still kept, and
            # the save says where; only the check against earlier runs is left out.
            earlier = []
        witness = next((r for r in earlier if r.facts.get(Explanation) is not None), None)
        result = self.analyze(result, self.plan.devices[spec.device], witness)
        if spec.processes == 1 and result.measurement is not None:
            self.singles[spec] = result
        return with_trust(_with_scaling(result, self.singles), earlier[:EARLIER_RUNS])


def _unanalyzed(result: Result, exc: Exception) -> Result:
    """`result` as measured, when its analysis failed: the caveats its record supports, and
    one saying what is missing and why."""
    said = Caveat(
        "incomplete",
        f"the analysis after the measurement failed ({one_line(exc)}): its FLOPs, MFU, "
        "verdict and scaling are missing; the measurement stands",
    )
    try:
        caveats = assess(result).caveats
    except Exception:  # the caveats' own assessment may be what failed
        caveats = ()
    return replace(result, metrics={**result.metrics, **Trust((*caveats, said)).to_metrics()})


@dataclass
class _Claims:
    """This run's claims on the configurations of a sweep it resumes (store.claims)."""

    store: Store
    sweep: str
    stale_after: float  # seconds without a word from another host's holder: it is gone
    owner: str = field(default_factory=identity)

    def take(self, progress: Progress) -> bool:
        """Whether this run measures the configuration's next process: claimed (or renewed),
        its newest stored state taken up (another run may have added to it), not complete."""
        spec = progress.config.spec
        holder = self.store.claim(self.sweep, spec, self.owner, self._stale)
        if holder is not None:
            progress.elsewhere = holder
            return False
        newest = self.store.results(Filters(sweep=self.sweep, workload=spec.workload), limit=200)
        mine = next((r for r in newest if r.spec == spec), None)
        if mine is not None and _processes(mine) > _processes(progress.result):
            progress.result = mine
        if progress.complete:
            self.release(spec)
            return False
        return True

    def release(self, spec: RunSpec) -> None:
        self.store.release(self.sweep, spec, self.owner)

    def _stale(self, holder: str, heartbeat: float) -> bool:
        alive = running(holder)  # None: another host's, known only by its heartbeat
        return alive is False or (alive is None and time.time() - heartbeat > self.stale_after)


def _processes(result: Result | None) -> int:
    rounds = result.facts.get(Rounds) if result is not None else None
    return 0 if rounds is None else len(rounds.passes) + len(rounds.failed)


def _stale_after(plan: Plan) -> float:
    """How long a holder on another host may go without a word (a process's time at most,
    twice over) before its claim is taken over."""
    return 2 * (plan.timeout + START_LIMIT_S) + 60


EARLIER_RUNS = 5  # the newest other runs of a configuration its interval is checked against


def _earlier_runs(store: Store, result: Result, sweep: str) -> list[Result]:
    """Runs of the same configuration on the same machine in other sweeps, newest first."""
    machine = machine_of(result.environment)
    same = Filters(workload=result.spec.workload, device=result.spec.device)
    return [
        r
        for r in store.results(same, limit=200)  # newest first: enough to find the last few
        if r.spec == result.spec
        and r.sweep != sweep
        and r.measurement is not None
        and machine_of(r.environment) == machine
    ]


def _next_pass(stored: Iterable[Result]) -> int:
    """The pass after every one stored in the sweep: a run resumed numbers its passes on, so
    that compare pairs only processes that ran side by side."""
    passes = [n for r in stored for n in (r.facts.get_or_default(Rounds).passes)]
    return max(passes, default=0) + 1


def _planned(plan: Plan, progress: Progress) -> int:
    """The processes a configuration is planned to get, as far as its plan is known."""
    rounds = progress.result.facts.get(Rounds) if progress.result is not None else None
    if rounds is not None and rounds.planned:
        return rounds.planned
    return first_rounds(plan.policy, progress.config.stop)


def _next_process(
    plan: Plan, progress: Progress, pass_no: int, on_block: Callable[[int, float], None]
) -> Result:
    """Run a configuration's next process; its result merged with the earlier ones', and its
    plan brought up to date (engine/rounds)."""
    config, before = progress.config, progress.result
    index = progress.processes
    process = Round(
        index,
        round_stop(plan.policy, config.stop, index),
        planned=_planned(plan, progress),
        repeat=before.measurement.repeat if before and before.measurement else None,
    )
    if plan.max_batch:
        latest = _search_max_batch(plan, config, on_block)
    else:
        latest = _run_one(plan, config, process, on_block)
    merged = merge(before, latest, pass_no)
    return replace(merged, metrics={**merged.metrics, **_plan_of(plan, config, merged)})


def _plan_of(plan: Plan, config: Config, result: Result) -> dict[str, Any]:
    policy = RoundPolicy(fixed=1) if plan.max_batch else plan.policy  # the search is one
    return more_rounds(policy, config.stop, result).to_metrics()


def resumable(plan: Plan, store: Store) -> dict[RunSpec, Result]:
    """This sweep's stored results by configuration, to go on from. A sweep stored by an
    accelbench that ran one process per configuration cannot be: its results say nothing of
    processes, so the rest would be measured differently."""
    stored: dict[RunSpec, Result] = {}
    for result in store.results(Filters(sweep=plan.id)):  # newest first: they win
        stored.setdefault(result.spec, result)
    for result in stored.values():
        if result.facts.get(Rounds) is None:
            raise UsageError(
                f"--resume: sweep {plan.id} was stored by an earlier accelbench, one "
                f"process per configuration (result #{result.id}); its results stay readable. "
                "Run it again without --resume to measure it in several processes"
            )
    return stored


def benchmark(
    request: BenchmarkRequest | None = None,
    *,
    db: str | Path | None = None,
    resume: bool = False,
    quiet: bool = True,
) -> list[Result]:
    """Plan and run a sweep as `accelbench run` does: each configuration in worker processes of
    its own (`request.rounds` of them, or adaptively up to `max_rounds`: engine/rounds),
    failures as Results. No request: seed-cnn's training on every device. With `db` every
    result is also stored there (and `resume` skips those stored); without, they are only
    returned. `quiet` hides the progress bar."""
    if request is not None and not isinstance(request, BenchmarkRequest):
        raise UsageError(
            f"benchmark takes a BenchmarkRequest, not {type(request).__name__}: "
            "benchmark(BenchmarkRequest(workloads='seed-cnn', devices='cpu'))"
        )
    return run_stored(plan(request or BenchmarkRequest()), db, resume=resume, quiet=quiet)


def run_stored(
    checked: Plan,
    db: str | Path | None = None,
    resume: bool = False,
    quiet: bool = True,
) -> list[Result]:
    """Run a checked plan, stored in `db` (or in a scratch database that goes with the call)."""
    with open_store(db) as store:
        return run_plan(checked, store, resume=resume, quiet=quiet)


@contextmanager
def open_store(db: str | Path | None) -> Iterator[Store]:
    """The database at `db`, or a scratch one that disappears with the call."""
    if db is not None:
        with Store(db) as store:
            yield store
        return
    with (
        tempfile.TemporaryDirectory(prefix="accelbench-") as scratch,
        Store(Path(scratch) / "results.db") as store,
    ):
        yield store


def _with_scaling(result: Result, singles: dict[RunSpec, Result]) -> Result:
    """Data-parallel results get their scaling efficiency: aggregate throughput over N times
    the single-process throughput of the same configuration, measured in the same sweep."""
    n, aggregate = result.spec.processes, result.samples_per_second
    if n == 1 or aggregate is None:
        return result
    single = singles.get(find_lever("processes").assign(result.spec, 1))
    if single is None or single.samples_per_second is None:
        extra: dict[str, object] = {
            SCALING_UNAVAILABLE: "the single-process run of this configuration is missing"
        }
    else:
        extra = {
            SINGLE_PROCESS_SAMPLES_PER_S: single.samples_per_second,
            SCALING_EFFICIENCY: aggregate / (n * single.samples_per_second),
        }
    return replace(result, metrics={**result.metrics, **extra})


def _search_max_batch(plan: Plan, config: Config, on_block: Callable[[int, float], None]) -> Result:
    """The run at the largest batch that fits, with the search's probes in its metrics."""
    from ..engine.maxbatch import PROBE_STOP, find_max_batch

    probe = replace(config, stop=PROBE_STOP)
    device = plan.devices[config.spec.device]
    found = find_max_batch(
        config.spec,
        lambda spec: _run_one(plan, replace(probe, spec=spec), None, on_block),
        swap_limit=device.swap_limit,  # MPS: recommended_max_memory(), past which it swaps
    )
    metrics = {**found.to_metrics(), DEVICE_MEMORY: device.total_memory}
    if found.largest is None:
        error = found.stopped_by or "not even a batch of 1 fits in memory"
        return Result(
            spec=config.spec,
            status="error" if found.stopped_by else "oom",
            error=error,
            metrics=metrics,
            environment=fingerprint(device),
        )
    return replace(found.largest, metrics={**found.largest.metrics, **metrics})


def _run_one(
    plan: Plan,
    config: Config,
    process: Round | None,
    on_block: Callable[[int, float], None],
) -> Result:
    """Unsupported configurations are settled here; the rest run in their own process."""
    device = plan.devices[config.spec.device]
    reason = unsupported(config.spec, device, plan.workloads[config.ref])
    if reason:
        result = Result(spec=config.spec, status="unsupported", error=reason)
    else:
        launch = plan.launch if config.spec.processes > 1 else None
        result = run_isolated(
            config.spec,
            config.ref,
            config.stop,
            plan.timeout,
            on_block,
            probe=plan.verdict,
            launch=launch,
            profile=plan.profile,
            latency=plan.latency,
            process=process,
        )
    if not result.environment:  # the worker died before it could describe its machine
        result = replace(result, environment=fingerprint(device))
    return result
