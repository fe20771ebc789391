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
from ..core.modes import DEFAULT_MODE, mode_of
from ..core.result import DEFAULT_BACKEND, Result, RunSpec, Value
from ..devices import Device
from ..errors import UsageError
from ..levers import Lever, all_levers, warmup_needed
from ..workloads import Workload, WorkloadRef, list_workloads
from ..workloads.llm import LanguageModel
from .measure import StopRule
from .runner import make_spec

__all__ = ["Config", "Progress", "Sweep", "check_language_model", "run_interleaved"]


DATA_PARALLEL_BLOCKS = 20  # timed blocks per rank when neither --epochs nor the workload fixes it


@dataclass(frozen=True)
class Config:
    """One configuration of a sweep: what to run, how to find its workload, when to stop."""

    spec: RunSpec
    ref: WorkloadRef
    stop: StopRule


LeverValues = tuple[tuple[str, tuple[Value, ...]], ...]
# Sweep ids hash the options under the names sweeps had before levers were registered objects,
# so that a sweep asked for again keeps its id and --resume finds it. These were always in the
# id; a lever added since drops out at its default, as backends did.
_ALWAYS_IN_ID = ("precisions", "channels_last", "compile", "cuda_graphs", "threads", "processes")
_ID_NAMES = {"precision": "precisions"}


@dataclass(frozen=True)
class Sweep:
    """The cross product of the options given. None in batch_sizes means the workload's own;
    `levers` holds the values asked for of each lever (a lever not named runs its default).
    Prompt lengths and new tokens multiply mode "generate"'s configurations only (None: the
    language model's defaults); the other modes' specs leave them unset."""

    workloads: tuple[WorkloadRef, ...]
    devices: tuple[str, ...]
    modes: tuple[str, ...] = (DEFAULT_MODE,)
    batch_sizes: tuple[int | None, ...] = (None,)
    levers: LeverValues = ()
    backends: tuple[str, ...] = (DEFAULT_BACKEND,)  # a name may stand for several (providers)
    blocks: int | None = None  # fixed count; else the workload's default or the adaptive rule
    max_time: float | None = None
    warmup: int = 1
    prompt_lengths: tuple[int | None, ...] = (None,)
    new_tokens: tuple[int | None, ...] = (None,)
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
        for name in ("prompt_lengths", "new_tokens"):  # added since; out of the id unless set
            if tuple(options[name]) == (None,):
                del options[name]
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
        size, then each other lever in registration order, then the backend."""
        self._check_generation(workloads)
        out = []
        for ref, workload in zip(self.workloads, workloads, strict=True):
            for device in devices:
                backends = expand_backends(self.backends, device)
                for spec in self._specs(workload, device, backends):
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
        prompts, news = self._generation_axes(mode, workload)
        axes: list[tuple[Lever | str, Sequence[Any]]] = [
            ("mode", (mode,)),
            (first, self.values_of(first)),
            ("batch_size", self.batch_sizes),
            ("prompt_length", prompts),
            ("new_tokens", news),
            *((lever, self.values_of(lever)) for lever in rest),
            ("backend", backends),
        ]
        specs = []
        for values in itertools.product(*(v for _, v in axes)):
            spec = make_spec(workload, device, steps_per_block=self.steps_per_block)
            for (axis, _), value in zip(axes, values, strict=True):
                if isinstance(axis, Lever):
                    spec = axis.assign(spec, value)
                elif value is not None:
                    spec = replace(spec, **{axis: value})
            specs.append(spec)
        return specs

    def _generation_axes(
        self, mode: str, workload: Workload
    ) -> tuple[tuple[int | None, ...], tuple[int | None, ...]]:
        """The prompt lengths and new tokens of `mode`: the language model's defaults where
        not given; (None,) each for the other modes."""
        if not mode_of(mode).decodes or not isinstance(workload, LanguageModel):
            return (None,), (None,)
        prompts = tuple(p or workload.prompt_length for p in self.prompt_lengths)
        return prompts, tuple(n or workload.new_tokens for n in self.new_tokens)

    def _check_generation(self, workloads: Sequence[Workload]) -> None:
        """Generate's options and workloads, each problem in one line before anything runs."""
        decoding = [mode for mode in self.modes if mode_of(mode).decodes]
        if not decoding:
            if (self.prompt_lengths, self.new_tokens) != ((None,), (None,)):
                raise UsageError("--prompt-lengths and --new-tokens apply to --modes generate only")
            return
        for number in (*self.prompt_lengths, *self.new_tokens):
            if number is not None and number < 1:
                raise UsageError(f"prompt lengths and new tokens must be 1 or more, not {number}")
        for workload in workloads:
            check_language_model(workload, self._generation_axes(decoding[0], workload))


def check_language_model(
    workload: Workload, axes: tuple[tuple[int | None, ...], tuple[int | None, ...]]
) -> None:
    """That mode generate can run `workload` at each prompt length and new tokens in `axes`;
    UsageError in one line otherwise."""
    if not isinstance(workload, LanguageModel):
        models = ", ".join(w.name for w in list_workloads() if isinstance(w, LanguageModel))
        raise UsageError(
            f"mode generate needs a causal language model, and {workload.name} is not one; "
            f"valid: {models}, or a --model factory returning a transformers model whose "
            "can_generate() is true"
        )
    longest = workload.max_positions
    prompt, new = max(p or 0 for p in axes[0]), max(n or 0 for n in axes[1])
    if longest is not None and prompt + new - 1 > longest:
        raise UsageError(
            f"a prompt of {prompt} tokens and {new} new tokens need {prompt + new - 1} "
            f"positions, more than {workload.name}'s {longest}: shorten --prompt-lengths or "
            "--new-tokens"
        )


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
