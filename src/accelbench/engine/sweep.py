"""Sweeps: list-valued options multiply into configurations, each run and stored in turn."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..backends import expand_backends
from ..core.result import DEFAULT_BACKEND, Result, RunSpec, Value
from ..devices import Device
from ..levers import Lever, all_levers
from ..workloads import Workload, WorkloadRef
from .measure import StopRule
from .runner import make_spec

__all__ = ["Sweep", "Config"]


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
    `levers` holds the values asked for of each lever (a lever not named runs its default)."""

    workloads: tuple[WorkloadRef, ...]
    devices: tuple[str, ...]
    modes: tuple[str, ...] = ("train",)
    batch_sizes: tuple[int | None, ...] = (None,)
    levers: LeverValues = ()
    backends: tuple[str, ...] = (DEFAULT_BACKEND,)  # a name may stand for several (providers)
    blocks: int | None = None  # fixed count; else the workload's default or the adaptive rule
    max_time: float | None = None
    warmup: int = 1

    def values_of(self, lever: Lever) -> tuple[Value, ...]:
        return dict(self.levers).get(lever.name, (lever.default,))

    @property
    def id(self) -> str:
        """Same options, same id: how --resume recognizes an interrupted sweep."""
        options = asdict(self)
        del options["levers"]
        if tuple(options["backends"]) == (DEFAULT_BACKEND,):
            del options["backends"]
        for lever in all_levers():
            key, values = _ID_NAMES.get(lever.name, lever.name), self.values_of(lever)
            if key in _ALWAYS_IN_ID or values != (lever.default,):
                options[key] = list(values)
        text = json.dumps(options, sort_keys=True, default=str)
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    def stop_rule(self, workload: Workload, processes: int = 1) -> StopRule:
        blocks = self.blocks
        if blocks is None and (self.max_time is None or processes > 1):
            # Data-parallel ranks step together, so they must all time the same count.
            blocks = workload.default_blocks or (DATA_PARALLEL_BLOCKS if processes > 1 else None)
        if self.max_time is None:
            return StopRule(blocks=blocks, warmup=self.warmup)
        return StopRule(blocks=blocks, max_time=self.max_time, warmup=self.warmup)

    def configs(self, workloads: Sequence[Workload], devices: Sequence[Device]) -> list[Config]:
        """Every configuration, in a stable order: workload, device, mode, precision, batch
        size, then each other lever in registration order, then the backend."""
        out = []
        for ref, workload in zip(self.workloads, workloads, strict=True):
            for device in devices:
                backends = expand_backends(self.backends, device)
                for spec in self._specs(workload, device, backends):
                    out.append(Config(spec, ref, self.stop_rule(workload, spec.processes)))
        return out

    def _specs(self, workload: Workload, device: Device, backends: list[str]) -> list[RunSpec]:
        first, *rest = all_levers()  # precision: batch sizes have always followed it
        axes: list[tuple[Lever | str, Sequence[Any]]] = [
            ("mode", self.modes),
            (first, self.values_of(first)),
            ("batch_size", self.batch_sizes),
            *((lever, self.values_of(lever)) for lever in rest),
            ("backend", backends),
        ]
        specs = []
        for values in itertools.product(*(v for _, v in axes)):
            spec = make_spec(workload, device)
            for (axis, _), value in zip(axes, values, strict=True):
                if isinstance(axis, Lever):
                    spec = axis.assign(spec, value)
                elif value is not None:
                    spec = replace(spec, **{axis: value})
            specs.append(spec)
        return specs


def run_configs(
    configs: Sequence[Config],
    run: Callable[[Config], Result],
    sweep_id: str,
    on_result: Callable[[Result], Result] | None = None,
    done: set[RunSpec] | frozenset[RunSpec] = frozenset(),
) -> list[Result]:
    """Run each configuration not in `done`, tag it with the sweep, hand it to `on_result`."""
    results = []
    for config in configs:
        if config.spec in done:
            continue
        result = replace(run(config), sweep=sweep_id)
        results.append(on_result(result) if on_result else result)
    return results
