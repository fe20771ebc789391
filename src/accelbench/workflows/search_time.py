"""Where an optimization search's wall time went: set-up (worker start and imports, building
the model, the warm-up blocks where torch.compile compiles), measuring (the timed samples),
the checks around them (drift, the verdict's probe, counting FLOPs), and the rest (the
search's own work, results coming back, processes ending), from each variant's overhead."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..core.result import Result
from ..engine.facts import Overhead

__all__ = ["SearchTime", "search_time"]


@dataclass(frozen=True)
class SearchTime:
    """Seconds, summed over every process the search started."""

    wall_s: float  # the search's, start to end
    start_s: float  # worker start and imports, loading the workload
    build_s: float  # building (or loading) the model, its inputs and levers (a graph capture)
    warmup_s: float  # warm-up blocks: first calls, cuDNN's autotuning, torch.compile
    timed_s: float  # the timed samples
    checks_s: float  # drift, the verdict's probe, FLOPs, latency, profiles

    @property
    def setup_s(self) -> float:
        return self.start_s + self.build_s + self.warmup_s

    @property
    def rest_s(self) -> float:
        return max(0.0, self.wall_s - self.setup_s - self.timed_s - self.checks_s)

    def text(self) -> str:
        return (
            f"the search's {self.wall_s:.0f} s: set-up {self.setup_s:.0f} s (worker start and "
            f"imports {self.start_s:.0f} s, building model, inputs and levers "
            f"{self.build_s:.0f} s, warm-up and compiling {self.warmup_s:.0f} s), measuring "
            f"{self.timed_s:.0f} s, checks (drift, the verdict's probe) {self.checks_s:.0f} s, "
            f"the rest {self.rest_s:.0f} s"
        )

    def to_dict(self) -> dict[str, float]:
        return {**asdict(self), "setup_s": self.setup_s, "rest_s": self.rest_s}


def search_time(results: Sequence[Result], wall_s: float) -> SearchTime:
    """The split of `wall_s` over `results`' processes (each result's overhead sums its own)."""
    parts = [o for r in results if (o := r.facts.get(Overhead)) is not None]

    def total(*names: str) -> float:
        return sum(getattr(o, name) or 0.0 for o in parts for name in names)

    return SearchTime(
        wall_s=wall_s,
        start_s=total("start_s", "import_s"),
        build_s=total("setup_s"),
        warmup_s=total("warmup_s"),
        timed_s=total("timed_s"),
        checks_s=total("probe_s", "latency_s", "drift_s", "profile_s", "count_s"),
    )
