"""Sweeps: list-valued options multiply into configurations, each run and stored in turn."""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..analysis.facts import Rounds
from ..backends import expand_backends
from ..core.mode_options import ModeOption
from ..core.modes import DEFAULT_MODE, all_modes, check_options_apply, mode_of
from ..core.result import DEFAULT_BACKEND, Result, RunSpec, Value
from ..devices import Device
from ..levers import Lever, all_levers, warmup_needed
from ..workloads import Workload, WorkloadRef
from .measure import StopRule
from .runner import make_spec

__all__ = ["Config", "ModeArgValues", "Progress", "Sweep", "run_interleaved"]


DATA_PARALLEL_BLOCKS = 20  # timed blocks per rank when neither --blocks nor the workload fixes it


@dataclass(frozen=True)
class Config:
    """One configuration of a sweep: what to run, how to find its workload, when to stop."""

    spec: RunSpec
    ref: WorkloadRef
    stop: StopRule


LeverValues = tuple[tuple[str, tuple[Value, ...]], ...]
# A mode option's name -> the values asked for (an option not named runs its default).
ModeArgValues = tuple[tuple[str, tuple[Value, ...]], ...]
# Sweep ids hash the options under the names sweeps had before levers were registered objects,
# so that a sweep asked for again keeps its id and --resume finds it. These were always in the
# id; a lever added since drops out at its default, as backends did.
_ALWAYS_IN_ID = ("precisions", "channels_last", "compile", "cuda_graphs", "threads", "processes")
_ID_NAMES = {"precision": "precisions"}


@dataclass(frozen=True)
class Sweep:
    """The cross product of the options given. None in batch_sizes means the workload's own;
    `levers` holds the values asked for of each lever (a lever not named runs its default).
    `mode_args` the values asked for of each mode option (core/mode_options): they multiply
    the configurations of the modes that declare the option only; an option not named takes
    its default from the workload (generate's prompt length: the language model's)."""

    workloads: tuple[WorkloadRef, ...]
    devices: tuple[str, ...]
    modes: tuple[str, ...] = (DEFAULT_MODE,)
    batch_sizes: tuple[int | None, ...] = (None,)
    levers: LeverValues = ()
    backends: tuple[str, ...] = (DEFAULT_BACKEND,)  # a name may stand for several (providers)
    blocks: int | None = None  # fixed count; else the workload's default or the adaptive rule
    max_time: float | None = None
    warmup: int = 1
    mode_args: ModeArgValues = ()
    steps_per_block: int | None = None  # None: the workload's (run --quick: one step an it)

    def values_of(self, lever: Lever) -> tuple[Value, ...]:
        return dict(self.levers).get(lever.name, (lever.default,))

    @property
    def id(self) -> str:
        """Same options, same id: how --resume recognizes an interrupted sweep."""
        options = asdict(self)
        del options["levers"]
        if tuple(options["backends"]) == (DEFAULT_BACKEND,):
            del options["backends"]
        del options["mode_args"]
        for option, values in self._asked_options():  # added since: out of the id unless set
            options[option.sweep_key] = list(values)
        if options["steps_per_block"] is None:  # likewise
            del options["steps_per_block"]
        for lever in all_levers():
            key, values = _ID_NAMES.get(lever.name, lever.name), self.values_of(lever)
            if key in _ALWAYS_IN_ID or values != (lever.default,):
                options[key] = list(values)
        text = json.dumps(options, sort_keys=True, default=str)
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    def stop_rule(self, workload: Workload, processes: int = 1, mode: str = "") -> StopRule:
        """When to stop timing, as the mode times its samples (a generation is synchronized at
        every token already, so the adaptive rule times each one alone)."""
        blocks = self.blocks
        if blocks is None and (self.max_time is None or processes > 1):
            # Data-parallel ranks step together, so they must all time the same count.
            blocks = workload.default_blocks or (DATA_PARALLEL_BLOCKS if processes > 1 else None)
        rule = StopRule(blocks=blocks, warmup=self.warmup)
        if self.max_time is not None:
            rule = replace(rule, max_time=self.max_time)
        return mode_of(mode).sample_rule(rule) if mode else rule

    def configs(self, workloads: Sequence[Workload], devices: Sequence[Device]) -> list[Config]:
        """Every configuration, in a stable order: workload, device, mode, precision, batch
        size, the mode's options, then each other lever in registration order, then the
        backend. UsageError, before anything runs, where a mode cannot run a workload so."""
        self._check_mode_args()
        out = []
        for ref, workload in zip(self.workloads, workloads, strict=True):
            for device in devices:
                backends = expand_backends(self.backends, device)
                for spec in self._specs(workload, device, backends):
                    mode_of(spec).check_args(spec, workload)
                    stop = self.stop_rule(workload, spec.processes, spec.mode)
                    stop = stop.at_least(warmup_needed(spec))
                    out.append(Config(spec, ref, stop))
        return out

    def _specs(self, workload: Workload, device: Device, backends: list[str]) -> list[RunSpec]:
        return [
            spec
            for mode in self.modes
            for spec in self._mode_specs(mode, workload, device, backends)
        ]

    def _mode_specs(
        self, mode: str, workload: Workload, device: Device, backends: list[str]
    ) -> list[RunSpec]:
        first, *rest = all_levers()  # precision: batch sizes have always followed it
        axes: list[tuple[Lever | ModeOption | str, Sequence[Any]]] = [
            ("mode", (mode,)),
            (first, self.values_of(first)),
            ("batch_size", self.batch_sizes),
            *self._mode_axes(mode, workload),
            *((lever, self.values_of(lever)) for lever in rest),
            ("backend", backends),
        ]
        specs = []
        for values in itertools.product(*(v for _, v in axes)):
            spec = make_spec(workload, device, steps_per_block=self.steps_per_block)
            for (axis, _), value in zip(axes, values, strict=True):
                if isinstance(axis, Lever):
                    spec = axis.assign(spec, value)
                elif isinstance(axis, ModeOption):
                    spec = spec.with_mode_args(**{axis.name: value})
                elif value is not None:
                    spec = replace(spec, **{axis: value})
            specs.append(spec)
        return specs

    def _mode_axes(self, mode: str, workload: Workload) -> list[tuple[ModeOption, Sequence[Any]]]:
        """Each option of `mode`: the values asked for, else the workload's default."""
        asked = dict(self.mode_args)
        return [
            (option, asked.get(option.name) or (option.default_for(workload),))
            for option in mode_of(mode).options
        ]

    def _asked_options(self) -> list[tuple[ModeOption, tuple[Value, ...]]]:
        """The mode options given values, each with its declaration (the first mode's)."""
        declared = {o.name: o for m in reversed(all_modes()) for o in m.options}
        return [(declared[name], values) for name, values in self.mode_args]

    def _check_mode_args(self) -> None:
        """Each option given is one of a mode swept: its values would otherwise go unused."""
        check_options_apply(dict(self.mode_args), self.modes)


@dataclass
class Progress:
    """One configuration of a sweep as its processes land: its result so far, which says
    (analysis.facts.Rounds) whether its plan is complete."""

    config: Config
    result: Result | None = None
    elsewhere: str = ""  # another run measures it (`run --resume` in parallel): who

    @property
    def complete(self) -> bool:
        rounds = self.result.facts.get(Rounds) if self.result is not None else None
        return rounds is not None and rounds.complete

    @property
    def processes(self) -> int:
        """Its processes so far, failed ones included."""
        rounds = self.result.facts.get(Rounds) if self.result is not None else None
        return 0 if rounds is None else len(rounds.passes) + len(rounds.failed)


def run_interleaved(
    configs: Sequence[Progress],
    run_process: Callable[[Progress, int], Result | None],
    first_pass: int = 1,
    min_gap: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Run the configurations' processes in passes: each pass runs the next process of every
    configuration not complete, in the sweep's order (A1 B1 C1, A2 B2 C2, ...), so the host's
    drift falls on every configuration alike. `run_process(progress, pass_no)` runs one and
    returns the configuration's result so far, which says whether more are due (or leaves it
    as it was, marked `elsewhere`, where another run measures it).

    `min_gap`: at least this many seconds between the starts of a configuration's successive
    processes, so that one run samples the host's slow states as well as its fast ones (the
    time other configurations' processes take counts towards it; the rest is waited)."""
    started: dict[int, float] = {}  # id(progress) -> when its last process started
    for pass_no in itertools.count(first_pass):
        due = [p for p in configs if not p.complete and not p.elsewhere]
        if not due:
            return
        for progress in due:
            last = started.get(id(progress))
            if last is not None and min_gap > 0:
                left = last + min_gap - clock()
                if left > 0:
                    sleep(left)
            started[id(progress)] = clock()
            progress.result = run_process(progress, pass_no)
