"""The value types of a benchmark: what was run (`RunSpec`) and what came of it (`Result`)."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from typing import Any

from .stats import Measurement
from .vocab import MODES, PRECISIONS, STATUSES

__all__ = [
    "MODES",
    "PRECISIONS",
    "PRUNING_KINDS",
    "Result",
    "RunSpec",
    "STATUSES",
    "machine_of",
    "parse_pruning",
    "utc_now",
]

# "unstructured": L1 magnitude zeros baked into dense weights (same shapes, same dense work);
# "channels": conv output channels removed (a smaller model).
PRUNING_KINDS = ("unstructured", "channels")


def parse_pruning(text: str) -> tuple[str, float] | None:
    """'channels:0.3' -> ('channels', 0.3); '' -> None. ValueError names what is wrong.

    The amount is the fraction of weights (unstructured) or of each layer's output channels
    (channels) to remove, strictly between 0 and 1.
    """
    if not text:
        return None
    kind, colon, amount_text = text.partition(":")
    if kind not in PRUNING_KINDS or not colon:
        raise ValueError(
            f"invalid pruning {text!r}; valid: none, "
            + ", ".join(f"{k}:AMOUNT" for k in PRUNING_KINDS)
            + " with AMOUNT a fraction such as 0.5"
        )
    try:
        amount = float(amount_text)
    except ValueError:
        raise ValueError(f"pruning amount {amount_text!r} is not a number like 0.5") from None
    if not 0 < amount < 1:
        raise ValueError(f"pruning amount must be between 0 and 1 (exclusive), got {amount_text}")
    return kind, amount


def machine_of(environment: dict[str, str]) -> str:
    """Which machine a result was measured on, as a short readable name.

    Results stored before fingerprints named the machine fall back to the host name and a hash
    of the OS and CPU strings, which also differ between machines that share a host name.
    """
    if environment.get("machine"):
        return environment["machine"]
    host = environment.get("host", "?")
    text = f"{environment.get('os', '')}|{environment.get('cpu', '')}"
    return f"{host}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"


def utc_now() -> str:
    """The time a result was made, as stored: ISO 8601, UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunSpec:
    """A run's identity: everything that changes the number being measured."""

    workload: str
    device: str
    batch_size: int
    steps_per_block: int
    mode: str = "train"
    precision: str = "fp32"
    channels_last: bool = False
    compile: str = ""  # "" for eager, else a torch.compile mode such as "default"
    cuda_graphs: bool = False
    threads: int = 0  # CPU threads for PyTorch; 0 leaves PyTorch's default
    backend: str = "torch"
    processes: int = 1  # data-parallel processes (DistributedDataParallel), one device each
    pruning: str = ""  # "" for none, else "KIND:AMOUNT", e.g. "channels:0.3" (parse_pruning)

    @property
    def label(self) -> str:
        """A short human name for the configuration, e.g. 'train bf16 b256 cl compile'."""
        parts = [self.mode, self.precision, f"b{self.batch_size}"]
        if self.channels_last:
            parts.append("channels_last")
        if self.compile:
            parts.append("compile" if self.compile == "default" else f"compile:{self.compile}")
        if self.cuda_graphs:
            parts.append("cuda_graphs")
        if self.threads:
            parts.append(f"{self.threads} thread{'s' if self.threads > 1 else ''}")
        if self.backend != "torch":
            parts.append(self.backend)
        if self.processes > 1:
            parts.append(f"x{self.processes} processes")
        if self.pruning:
            parts.append(f"pruned-{self.pruning}")
        return " ".join(parts)


@dataclass(frozen=True)
class Result:
    """One configuration's outcome. A failure keeps its status and message and no samples.

    `metrics` holds figures derived in the worker beyond timing (set-up time, FLOPs, power...),
    each under a documented key, so new ones need no schema change.
    """

    spec: RunSpec
    status: str
    measurement: Measurement | None = None
    error: str = ""
    peak_memory: int | None = None
    peak_memory_meaning: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    created_at: str = field(default_factory=utc_now)
    sweep: str = ""  # the id of the sweep that produced it, for --resume
    id: int | None = None  # set once stored; local to one database
    uid: str = field(default_factory=lambda: uuid.uuid4().hex)  # the same in every database

    @property
    def verification(self) -> dict[str, Any] | None:
        """What `accelbench verify` recorded, for its results (which carry no measurement)."""
        found = self.metrics.get("verify")
        return found if isinstance(found, dict) else None

    @property
    def samples_per_block(self) -> int:
        """Samples one block processes, over all data-parallel processes (each has a batch)."""
        return self.spec.batch_size * self.spec.steps_per_block * self.spec.processes

    @property
    def samples_per_second(self) -> float | None:
        m = self.measurement
        return None if m is None else m.rate.median * self.samples_per_block

    def to_record(self) -> dict[str, Any]:
        """What is stored, raw samples and all, in plain JSON types: `from_record` inverts it."""
        m = self.measurement
        return {
            "uid": self.uid,
            "created_at": self.created_at,
            "sweep": self.sweep,
            "spec": asdict(self.spec),
            "status": self.status,
            "error": self.error,
            "samples": list(m.samples) if m else [],
            "warmup": list(m.warmup) if m else [],
            "repeat": m.repeat if m else 1,
            "peak_memory": self.peak_memory,
            "peak_memory_meaning": self.peak_memory_meaning,
            "environment": self.environment,
            "metrics": self.metrics,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Result:
        """A Result from `to_record`'s output; ValueError names the first thing wrong."""
        _check_record(record)
        samples = tuple(float(s) for s in record["samples"])
        measurement = None
        if samples:
            warmup = tuple(float(s) for s in record["warmup"])
            measurement = Measurement(samples, warmup, int(record["repeat"]))
        return cls(
            uid=record["uid"],
            created_at=record["created_at"],
            sweep=record["sweep"],
            spec=RunSpec(**record["spec"]),
            status=record["status"],
            error=record["error"],
            measurement=measurement,
            peak_memory=record["peak_memory"],
            peak_memory_meaning=record["peak_memory_meaning"],
            environment=record["environment"],
            metrics=record["metrics"],
        )

    def to_dict(self) -> dict[str, Any]:
        """Everything, raw samples included, in plain JSON types."""
        out: dict[str, Any] = {
            "id": self.id,
            "uid": self.uid,
            "created_at": self.created_at,
            "sweep": self.sweep,
            "spec": asdict(self.spec),
            "label": self.spec.label,
            "status": self.status,
            "error": self.error,
            "peak_memory_bytes": self.peak_memory,
            "peak_memory_meaning": self.peak_memory_meaning,
            "metrics": self.metrics,
            "environment": self.environment,
        }
        m = self.measurement
        if m is not None:
            out["samples_s"] = list(m.samples)
            out["warmup_s"] = list(m.warmup)
            out["blocks_per_sample"] = m.repeat
            out["block_time_s"] = m.time.to_dict()
            out["it_per_s"] = m.rate.to_dict()
            out["samples_per_s_median"] = self.samples_per_second
            out["step_time_s_median"] = m.time.median / self.spec.steps_per_block
            out["warnings"] = m.warnings
        return out


_RECORD_TYPES: dict[str, type | tuple[type, ...]] = {
    "uid": str,
    "created_at": str,
    "sweep": str,
    "spec": dict,
    "status": str,
    "error": str,
    "samples": list,
    "warmup": list,
    "repeat": int,
    "peak_memory": (int, type(None)),
    "peak_memory_meaning": str,
    "environment": dict,
    "metrics": dict,
}


def _check_record(record: Any) -> None:
    if not isinstance(record, dict):
        raise ValueError(f"a result must be an object, not {type(record).__name__}")
    for key, kind in _RECORD_TYPES.items():
        if key not in record:
            raise ValueError(f"missing {key!r}")
        value = record[key]
        if isinstance(value, bool) or not isinstance(value, kind):  # bool passes for int
            raise ValueError(f"{key!r} has the wrong type ({type(record[key]).__name__})")
    if record["status"] not in STATUSES:
        raise ValueError(f"unknown status {record['status']!r}")
    names = {f.name for f in fields(RunSpec)}
    spec = record["spec"]
    if set(spec) - names or not {"workload", "device", "batch_size", "steps_per_block"} <= set(
        spec
    ):
        raise ValueError(f"spec has fields {sorted(spec)}; expected some of {sorted(names)}")
    _check_spec(spec)
    environment = record["environment"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in environment.items()):
        raise ValueError("environment must map names to text")
    if not all(isinstance(s, (int, float)) and s > 0 for s in record["samples"] + record["warmup"]):
        raise ValueError("samples must be positive numbers of seconds")
    if record["repeat"] < 1:
        raise ValueError("repeat must be 1 or more")


_SPEC_TYPES = {"str": str, "int": int, "bool": bool}
_AT_LEAST_ONE = ("batch_size", "steps_per_block", "processes")


def _check_spec(spec: dict[str, Any]) -> None:
    declared = {f.name: _SPEC_TYPES[str(f.type)] for f in fields(RunSpec)}
    for name, value in spec.items():
        kind = declared[name]
        if isinstance(value, bool) is not (kind is bool) or not isinstance(value, kind):
            raise ValueError(f"spec {name!r} has the wrong type ({type(value).__name__})")
    for name in _AT_LEAST_ONE:
        if name in spec and spec[name] < 1:
            raise ValueError(f"spec {name!r} must be 1 or more, not {spec[name]}")
    if spec.get("threads", 0) < 0:
        raise ValueError("spec 'threads' must not be negative")
    parse_pruning(spec.get("pruning", ""))  # its ValueError names what is wrong
