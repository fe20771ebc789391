"""The value types of a benchmark: what was run (`RunSpec`) and what came of it (`Result`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .stats import Measurement

__all__ = ["Result", "RunSpec", "STATUSES"]

STATUSES = ("ok", "oom", "error")


@dataclass(frozen=True)
class RunSpec:
    """A run's identity: everything that changes the number being measured."""

    workload: str
    device: str
    batch_size: int
    steps_per_block: int
    mode: str = "train"
    precision: str = "fp32"
    backend: str = "torch"


@dataclass(frozen=True)
class Result:
    """One configuration's outcome. A failure keeps its status and message and no samples."""

    spec: RunSpec
    status: str
    measurement: Measurement | None = None
    error: str = ""
    peak_memory: int | None = None
    peak_memory_meaning: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    created_at: str = ""
    id: int | None = None  # set once stored

    @property
    def samples_per_block(self) -> int:
        return self.spec.batch_size * self.spec.steps_per_block

    def to_dict(self) -> dict[str, Any]:
        """Everything, raw samples included, in plain JSON types."""
        out: dict[str, Any] = {
            "id": self.id,
            "created_at": self.created_at,
            "spec": asdict(self.spec),
            "status": self.status,
            "error": self.error,
            "peak_memory_bytes": self.peak_memory,
            "peak_memory_meaning": self.peak_memory_meaning,
            "environment": self.environment,
        }
        m = self.measurement
        if m is not None:
            out["samples_s"] = list(m.samples)
            out["warmup_s"] = list(m.warmup)
            out["block_time_s"] = m.time.to_dict()
            out["it_per_s"] = m.rate.to_dict()
            out["samples_per_s_median"] = m.rate.median * self.samples_per_block
            out["step_time_s_median"] = m.time.median / self.spec.steps_per_block
            out["warnings"] = m.warnings
        return out
