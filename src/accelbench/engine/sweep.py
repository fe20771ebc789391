"""Sweeps: list-valued options multiply into configurations, each run and stored in turn."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

from ..backends.onnxruntime import expand_backends
from ..core.result import Result, RunSpec
from ..devices import Device
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


@dataclass(frozen=True)
class Sweep:
    """The cross product of the options given. None in batch_sizes means the workload's own."""

    workloads: tuple[WorkloadRef, ...]
    devices: tuple[str, ...]
    modes: tuple[str, ...] = ("train",)
    precisions: tuple[str, ...] = ("fp32",)
    batch_sizes: tuple[int | None, ...] = (None,)
    channels_last: tuple[bool, ...] = (False,)
    compile: tuple[str, ...] = ("",)
    cuda_graphs: tuple[bool, ...] = (False,)
    threads: tuple[int, ...] = (0,)
    processes: tuple[int, ...] = (1,)  # data-parallel world sizes, ascending
    backends: tuple[str, ...] = ("torch",)  # "onnxruntime" means each provider of the device
    pruning: tuple[str, ...] = ("",)  # "" for none, else "KIND:AMOUNT"
    blocks: int | None = None  # fixed count; else the workload's default or the adaptive rule
    max_time: float | None = None
    warmup: int = 1

    @property
    def id(self) -> str:
        """Same options, same id: how --resume recognizes an interrupted sweep."""
        options = asdict(self)
        # Dimensions added later drop out at their defaults, so older sweeps keep their ids.
        for name, default in (("pruning", ("",)), ("backends", ("torch",))):
            if options[name] == default:
                del options[name]
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
        """Every configuration, in a stable order (workload, device, then the options)."""
        out = []
        dimensions: dict[str, Sequence[object]] = {
            "mode": self.modes,
            "precision": self.precisions,
            "batch_size": self.batch_sizes,
            "channels_last": self.channels_last,
            "compile": self.compile,
            "cuda_graphs": self.cuda_graphs,
            "threads": self.threads,
            "processes": self.processes,
            "pruning": self.pruning,
        }
        values = itertools.product(*dimensions.values())
        combos = [dict(zip(dimensions, v, strict=True)) for v in values]
        for ref, workload in zip(self.workloads, workloads, strict=True):
            for device in devices:
                backends = expand_backends(self.backends, device)
                for options, backend in itertools.product(combos, backends):
                    spec = make_spec(workload, device, backend=backend, **options)
                    out.append(Config(spec, ref, self.stop_rule(workload, spec.processes)))
        return out


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
