"""Optimization searches: a typed request becomes the search for one workload on one device;
each variant runs in its own worker with its drift measured, is stored as it lands, and the
whole is assessed against fp32 eager."""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..analysis.facts import OPTIMIZE_POLICY, Rounds
from ..analysis.metrics import Analyzer
from ..analysis.trust import with_trust
from ..backends import unsupported
from ..core.limits import count_problem, seconds_problem
from ..core.modes import check_mode_args, check_options_apply, find_mode, mode_of
from ..core.result import Result, RunSpec, Value
from ..devices import Device, pick_device, resolve_devices
from ..devices.fingerprint import fingerprint
from ..engine.measure import StopRule
from ..engine.rounds import Round, merge
from ..engine.runner import make_spec
from ..engine.track import progress_bar
from ..engine.worker import planning_workload, run_isolated
from ..errors import AccelbenchError, UsageError
from ..levers import default_groups
from ..store.db import Store
from ..workloads import Workload, WorkloadRef
from . import inputs
from .benchmark import open_store
from .facts import OptimizeTag
from .optimize import (
    Assessment,
    Rung,
    Tolerance,
    assess,
    is_launch_bound,
    levers_not_tried,
    no_gain_reason,
    opt_in_not_asked,
)
from .search import Budget, Search, SearchOutcome
from .search_time import SearchTime, search_time

__all__ = ["Ladder", "OptimizeRequest", "Searched", "optimize", "plan_ladder", "run_ladder"]

# Timed seconds per variant under the adaptive rule: it stops sooner once the median's 95% CI
# is within 2%, which a GPU's steady steps reach in a few seconds.
DEFAULT_SECONDS = 2.0
DEFAULT_BUDGET = 300.0  # the whole search: a coffee break
# A lever worth under 2% is not worth a line of the user's code, nor a place in every later
# trial (cudnn.benchmark kept on resnet50 at 1.00x [1.00–1.01], issue 39).
DEFAULT_THRESHOLD = 0.02
SAMPLES_FOR_CI = 6  # the fewest for a distribution-free 95% CI of the median
# Timed seconds after which a variant stops short of those six samples: one far slower than
# its peers (fp16 on a CPU without fp16 units: 30 s a gpt2 generation, 14x fp32's) must not
# eat the budget; its interval, from fewer samples, says what they can tell.
SAMPLE_CAP_S = 30.0
INDUCTOR_CACHE = "TORCHINDUCTOR_CACHE_DIR"  # torch.compile's kernels and graphs, per search


@dataclass(frozen=True, kw_only=True)
class OptimizeRequest:
    """One workload on one device: which levers to try, how long to time each rung, and how
    far a rung's outputs may drift from fp32's. It checks its sizes, counts and seconds as it
    is made (UsageError, one line); the device, mode and levers are checked by `plan_ladder`."""

    workload: WorkloadRef
    device: str = ""  # one device name; "": the best available
    mode: str = "infer"
    batch_size: int | None = None  # None: the workload's own
    # The mode's own options by name (its Mode.options); one not given takes its default
    # (the workload's, where the option says so).
    mode_args: Mapping[str, Value] = field(default_factory=dict)
    levers: tuple[str, ...] = field(default_factory=default_groups)  # all but the opt-in
    epochs: int | None = None  # time exactly this many its per rung; else the adaptive rule
    max_time: float | None = None  # the adaptive rule's timed seconds (None: DEFAULT_SECONDS)
    warmup: int = 1
    timeout: float = 900.0  # per variant
    tolerance: Tolerance = Tolerance()
    budget: float = DEFAULT_BUDGET  # seconds for the whole search
    # a lever is kept only where its gain's 95% interval lies above 1 + this
    keep_threshold: float = DEFAULT_THRESHOLD

    def __post_init__(self) -> None:
        # a workload by name, a lever group or several (workflows/inputs)
        object.__setattr__(self, "workload", inputs.workload_ref("workload", self.workload))
        object.__setattr__(self, "levers", inputs.names("levers", self.levers))
        if not isinstance(self.tolerance, Tolerance):
            raise UsageError(f"tolerance takes a Tolerance, not {self.tolerance!r}")
        for name in ("batch_size", "epochs", "warmup"):
            value, least = getattr(self, name), 0 if name == "warmup" else 1
            problem = None if value is None else count_problem(value, least)
            if problem:
                raise UsageError(f"{name} {problem}, not {value!r}")
        for name in ("max_time", "timeout", "budget"):
            value = getattr(self, name)
            problem = None if value is None else seconds_problem(value)
            if problem:
                raise UsageError(f"--{name.replace('_', '-')} {problem}, got {value!r}")
        if not (_share(self.keep_threshold) and self.keep_threshold < 1):
            raise UsageError(
                f"--keep-threshold must be a share from 0 to below 1 (0.02 or 2%), got "
                f"{self.keep_threshold!r}"
            )


@dataclass(frozen=True, kw_only=True)  # ten fields: by name, never by position
class Ladder:
    """A planned search: what it measures against, with which rule, within what budget."""

    ref: WorkloadRef
    workload: Workload
    device: Device
    base: RunSpec
    groups: tuple[str, ...]
    stop: StopRule
    tolerance: Tolerance
    timeout: float
    budget: float
    not_tried: dict[str, str]  # levers asked for that do not apply here, and why
    keep_threshold: float = DEFAULT_THRESHOLD

    # Each run of the ladder is its own sweep: a report draws every ladder against its own
    # fp32 eager, never against another run's or another machine's.
    id: str = field(default_factory=lambda: f"optimize-{uuid.uuid4().hex[:12]}")


def plan_ladder(request: OptimizeRequest) -> Ladder:
    workload = planning_workload(request.workload, request.timeout)  # in a worker for a --model
    device = _one_device(request.device)
    # One step per block: the adaptive rule then groups steps into samples of a quarter second
    # or more, so even a workload whose "it" is an epoch (seed 000's, 20 steps) gets the six
    # samples an interval needs within the search's few seconds per variant.
    steps = 1 if not request.epochs else None
    base = make_spec(
        workload,
        device,
        mode=request.mode,
        batch_size=request.batch_size,
        steps_per_block=steps,
    )
    base = _with_mode_args(request, base, workload)
    if request.epochs:
        stop = StopRule(blocks=request.epochs, warmup=request.warmup)
    else:
        seconds = request.max_time or DEFAULT_SECONDS
        stop = StopRule(
            max_time=seconds,
            warmup=request.warmup,
            min_samples=SAMPLES_FOR_CI,
            time_cap=max(SAMPLE_CAP_S, 15 * seconds),
        )
    stop = mode_of(request.mode).sample_rule(stop)
    not_tried = levers_not_tried(base, device, workload, request.levers)
    not_tried |= opt_in_not_asked(request.levers)
    return Ladder(
        ref=request.workload,
        workload=workload,
        device=device,
        base=base,
        groups=tuple(request.levers),
        stop=stop,
        tolerance=request.tolerance,
        timeout=request.timeout,
        budget=request.budget,
        not_tried=not_tried,
        keep_threshold=request.keep_threshold,
    )


def _with_mode_args(request: OptimizeRequest, base: RunSpec, workload: Workload) -> RunSpec:
    """`base` with each of its mode's options: as asked, else the workload's default; checked
    against the mode's options and the workload (UsageError, one line)."""
    mode = find_mode(request.mode)
    check_options_apply(request.mode_args, (mode.name,), single=True)
    check_mode_args(mode, request.mode_args)
    for option in mode.options:
        value = request.mode_args.get(option.name, option.default_for(workload))
        base = base.with_mode_args(**{option.name: value})
    mode.check_args(base, workload)
    return base


def _share(value: object) -> bool:
    """Whether `value` is a finite number from 0 up (a bool is not one)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return number and math.isfinite(value) and value >= 0  # type: ignore[arg-type,operator]


def _one_device(name: str) -> Device:
    if not name:
        return pick_device()
    devices = resolve_devices(name)
    if len(devices) != 1:
        raise UsageError(f"optimize takes one device; {name!r} names {len(devices)}")
    return devices[0]


@dataclass(frozen=True)
class Searched:
    """A search run: what it measured, in its order and words, and each variant judged."""

    outcome: SearchOutcome
    verdicts: list[Assessment]
    time: SearchTime | None = None  # where its wall time went; None where not measured

    def path(self) -> list[str]:
        """The search's path as the console and --json show it: each step's figure with every
        process in, as the table's are, and why each variant that did not pay is known not to."""
        verdicts = self.verdicts
        launch_bound = bool(verdicts) and is_launch_bound(verdicts[0].result)
        reasons = [no_gain_reason(v.rung, v.speedup, launch_bound) for v in verdicts]
        return self.outcome.path(reasons)


ProcessFn = Callable[..., Result]


def _processes(plan: Ladder, store: Store) -> ProcessFn:
    """One process of a variant, merged with its earlier ones (`before`), analyzed and stored
    as it lands; a first process may stop early where it cannot reach `target`, the block rate
    the keep threshold asks of it on its stack (StopRule.give_up_rate)."""
    analyze = Analyzer(store.calibrations())
    passes = itertools.count(1)  # no two variants' processes share one: none is paired

    def process(
        rung: Rung, before: Result | None, timeout: float, target: float | None = None
    ) -> Result:
        earlier = before.measurement if before is not None else None
        index = 0 if earlier is None else earlier.processes
        repeat = None if earlier is None else earlier.repeat
        stop = replace(plan.stop, give_up_rate=target)
        step = Round(index, stop, planned=index + 1, repeat=repeat)
        # the verdict needs fp32 eager's probe, in each of its processes
        latest = _run_rung(plan, rung, timeout, rung.spec == plan.base, step)
        result = _settled(merge(before, latest, next(passes)))
        result = with_trust(analyze(result, plan.device))
        tag = OptimizeTag(rung.name, vars(plan.tolerance)).to_metrics()
        return store.save(replace(result, sweep=plan.id, metrics={**result.metrics, **tag}))

    return process


def run_ladder(plan: Ladder, store: Store, quiet: bool = False) -> Searched:
    """The search, each variant measured and stored as its processes land, then judged
    against fp32 eager. Each variant starts with one process (fp32 eager with several, whose
    spread the others borrow); the search adds processes where a decision is close."""
    budget = Budget(plan.budget)
    process = _processes(plan, store)
    with _search_folder(), progress_bar(disable=quiet) as bar:
        task = bar.add_task(plan.ref.name, total=plan.budget)

        def on_start(name: str) -> None:
            left = max(0.0, budget.left())
            bar.update(task, completed=budget.used(), description=f"{name} ({left:.0f} s left)")

        search = Search(
            plan.base,
            plan.device,
            plan.workload,
            plan.groups,
            plan.tolerance,
            lambda rung, timeout, target: process(rung, None, timeout, target),
            lambda spec: _unsupported(spec, plan),
            budget,
            plan.timeout,
            on_start,
            more=process,
            threshold=plan.keep_threshold,
        )
        outcome = search.run()
        bar.update(task, completed=plan.budget)
    trials = outcome.trials
    at = {id(t): i for i, t in enumerate(trials)}
    references = [at.get(id(t.parent)) if t.parent is not None else None for t in trials]
    verdicts = assess(
        [t.rung for t in trials], [t.result for t in trials], plan.tolerance, references
    )
    return Searched(outcome, verdicts, search_time([t.result for t in trials], outcome.wall_s))


def optimize(
    request: OptimizeRequest, *, db: str | Path | None = None, quiet: bool = True
) -> Searched:
    """`accelbench optimize` as a function: plan the search `request` asks for and run it,
    each variant in its own worker, stored in `db` as it lands (without `db`, in a scratch
    database that goes with the call). The returned value is what the command renders: the
    variants judged against fp32 eager, and `recommend(searched.verdicts)` the choice."""
    ladder = plan_ladder(request)
    with open_store(db) as store:
        return run_ladder(ladder, store, quiet=quiet)


def _settled(result: Result) -> Result:
    """A variant's processes as the search left them: complete, since the search, not a plan,
    decides whether another runs."""
    rounds = result.facts.get(Rounds)
    assert rounds is not None
    done = len(rounds.passes)
    why = "the search adds processes only where a decision is close"
    settled = replace(rounds, planned=done, complete=True, reason=why, policy=OPTIMIZE_POLICY)
    return replace(result, metrics={**result.metrics, **settled.to_metrics()})


@contextlib.contextmanager
def _search_folder() -> Iterator[None]:
    """One temporary folder for the search's workers, removed after it: the fp32 reference
    outputs, the workload's model built once (workloads/weights), and Inductor's cache, so
    that a compiled stack's later processes do not compile from nothing (a cache the user
    named in TORCHINDUCTOR_CACHE_DIR is theirs, and kept)."""
    from ..analysis.drift import CACHE_DIR
    from ..workloads.weights import WEIGHTS_DIR

    with tempfile.TemporaryDirectory(prefix="accelbench-search-") as folder:
        names = {CACHE_DIR: "reference", WEIGHTS_DIR: "weights", INDUCTOR_CACHE: "inductor"}
        if os.environ.get(INDUCTOR_CACHE):
            del names[INDUCTOR_CACHE]
        before = {name: os.environ.get(name) for name in names}
        for name, sub in names.items():
            (Path(folder) / sub).mkdir()
            os.environ[name] = str(Path(folder) / sub)  # workers take the parent's environment
        try:
            yield
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _unsupported(spec: RunSpec, plan: Ladder) -> str | None:
    try:
        return unsupported(spec, plan.device, plan.workload)
    except AccelbenchError as exc:  # a missing optional package: this variant cannot run
        return str(exc)


def _run_rung(plan: Ladder, rung: Rung, timeout: float, probe: bool, step: Round) -> Result:
    reason = _unsupported(rung.spec, plan)
    if reason:
        result = Result(spec=rung.spec, status="unsupported", error=reason)
    else:
        result = run_isolated(
            rung.spec, plan.ref, step.stop, timeout, probe=probe, drift=True, process=step
        )
        result = _said_of_budget(result, timeout, plan)
    if not result.environment:
        result = replace(result, environment=fingerprint(plan.device))
    return result


def _said_of_budget(result: Result, timeout: float, plan: Ladder) -> Result:
    """A variant stopped at what was left of the search's budget, not at the `--timeout` the
    worker was given for it (which the user may never have set): said so."""
    if result.status != "timeout" or timeout >= plan.timeout:
        return result
    why = (
        f"no result within the {timeout:.3g} s left of the search's --budget "
        f"{plan.budget:g} s; the worker was stopped"
    )
    return replace(result, error=why)
