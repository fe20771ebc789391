"""The value types of a benchmark: what was run (`RunSpec`) and what came of it (`Result`)."""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime, timezone
from typing import Any, Protocol

from ..errors import UsageError
from .facts import Facts, check
from .stats import Measurement
from .vocab import DEFAULT_MODE, PRECISIONS, STATUSES, TORCH, Precision, Status

__all__ = [
    "PRECISIONS",
    "RECORD_FIELDS",
    "Result",
    "RunSpec",
    "STATUSES",
    "DEFAULT_BACKEND",
    "Value",
    "machine_of",
    "utc_now",
]

DEFAULT_BACKEND = TORCH  # the backends are in accelbench.backends; this one is PyTorch eager


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


Value = str | int | float | bool  # a lever's value: a plain JSON scalar


@dataclass(frozen=True)
class RunSpec:
    """A run's identity: everything that changes the number being measured.

    `levers` holds the value of every optimization lever that is not at its default, as a
    sorted tuple of (name, value): the registry in `accelbench.levers` knows what each means,
    and a configuration with no lever set is the plain eager model. Precision is a field of its
    own because every backend reads it (ONNX Runtime quantizes for int8) and filters select by it.

    `mode_args` holds the values of the mode's own parameters (its `Mode.options`, e.g.
    generate's prompt_length and new_tokens), as a sorted tuple of (name, value) like the
    levers; the mode knows what each means. Empty for a mode with none, and then left out of
    `to_dict`, so those records read as they always did.

    A spec checks its own precision and sizes as it is made (UsageError, one line naming the
    valid choices), so no caller checks them again; the mode and backend are open registries
    above this layer, checked where they are looked up.
    """

    workload: str
    device: str
    batch_size: int
    steps_per_block: int
    mode: str = DEFAULT_MODE
    precision: Precision = "fp32"
    backend: str = DEFAULT_BACKEND
    levers: tuple[tuple[str, Value], ...] = ()
    mode_args: tuple[tuple[str, Value], ...] = ()

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise UsageError(
                f"unknown precision {self.precision!r}; valid: {', '.join(PRECISIONS)}"
            )
        for name in _SIZES:
            value = getattr(self, name)
            if type(value) is not int or value < 1:  # a bool is no size
                raise UsageError(f"{name} must be a positive integer, not {value!r}")
        if list(self.mode_args) != sorted(dict(self.mode_args).items()):
            raise UsageError("mode_args must be (name, value) pairs sorted by name, each once")

    def lever(self, name: str, default: Value) -> Value:
        """The value of lever `name`, `default` when it is not set."""
        return dict(self.levers).get(name, default)

    def with_lever(self, name: str, value: Value, default: Value) -> RunSpec:
        """This spec with lever `name` set; at its default the lever is left out, so equal
        configurations are equal specs whichever way they were made."""
        values = {k: v for k, v in self.levers if k != name}
        if value != default:
            values[name] = value
        return replace(self, levers=tuple(sorted(values.items())))

    def mode_arg(self, name: str) -> Value | None:
        """The value of the mode's parameter `name`; None when it is not set."""
        return dict(self.mode_args).get(name)

    def with_mode_args(self, **values: Value | None) -> RunSpec:
        """This spec with each named mode argument set (None: removed)."""
        args = {**dict(self.mode_args), **values}
        return replace(
            self, mode_args=tuple(sorted((k, v) for k, v in args.items() if v is not None))
        )

    @property
    def processes(self) -> int:
        """The data-parallel world size (the "processes" lever): the engine launches that many
        ranks, and each processes a batch, so samples per block count it."""
        return int(self.lever("processes", 1))

    @property
    def units_per_sample(self) -> int:
        """What one sample of the batch yields in the rate: 1, or what its mode says (the
        tokens a generation decodes)."""
        if _MODE_OF is None:
            raise RuntimeError("no mode registry: import accelbench (core/modes installs it)")
        return _MODE_OF(self.mode).units_per_sample(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types, levers and mode arguments as objects: `from_dict` inverts it. No
        mode arguments: none written, so those records read as they always did."""
        out = {**asdict(self), "levers": dict(self.levers), "mode_args": dict(self.mode_args)}
        if not self.mode_args:
            del out["mode_args"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        """The spec `to_dict` made, or one written before mode arguments (generate's
        `prompt_length` and `new_tokens` as fields of their own). A stored spec is data, not a
        request: what is wrong with it is a ValueError, as with every damaged record (the
        store names it and leaves it out)."""
        data = _upgraded(data)
        levers, args = data.get("levers", {}), data.get("mode_args", {})
        try:
            return cls(
                **{
                    **data,
                    "levers": tuple(sorted(levers.items())),
                    "mode_args": tuple(sorted(args.items())),
                }
            )
        except UsageError as exc:
            raise ValueError(f"spec: {exc}") from None


class _ModeRule(Protocol):
    def units_per_sample(self, spec: RunSpec) -> int: ...


# The mode registry's lookup (core/modes.mode_of). The registry reads RunSpec, so this module
# may not import it (no import cycles): it installs its lookup here as it is imported, which
# importing accelbench always does.
_MODE_OF: Callable[[str], _ModeRule] | None = None


def install_mode_lookup(mode_of: Callable[[str], _ModeRule]) -> None:
    """Called once, by core/modes."""
    global _MODE_OF
    _MODE_OF = mode_of


# Mode generate's arguments were fields of their own before mode arguments (schema 10 and
# results files v4, NULL or absent for the other modes).
LEGACY_MODE_FIELDS = ("prompt_length", "new_tokens")
_SIZES = ("batch_size", "steps_per_block")


def _upgraded(data: dict[str, Any]) -> dict[str, Any]:
    """A spec with the legacy fields moved into `mode_args` (a None one dropped)."""
    legacy = {k: data[k] for k in LEGACY_MODE_FIELDS if k in data}
    if not legacy:
        return data
    rest = {k: v for k, v in data.items() if k not in legacy}
    args = {k: v for k, v in legacy.items() if v is not None}
    return {**rest, "mode_args": {**args, **rest.get("mode_args", {})}}


@dataclass(frozen=True)
class Result:
    """One configuration's outcome. A failure keeps its status and message and no samples.

    `metrics` holds figures derived in the worker beyond timing (set-up time, FLOPs, power...),
    each under the key of a fact type registered by the module that defines it (core/facts), so
    new ones need no schema change; `facts` reads them typed.
    """

    spec: RunSpec
    status: Status
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
    def facts(self) -> Facts:
        """The metrics read typed (`result.facts.get(Power)`)."""
        return Facts(self.metrics)

    @property
    def samples_per_block(self) -> int:
        """Samples one block processes, over all data-parallel processes (each has a batch);
        times what its mode counts per sample (a generation: its new tokens, so samples/s is
        tokens/s over whole generations, prefill included)."""
        spec = self.spec
        return spec.batch_size * spec.steps_per_block * spec.processes * spec.units_per_sample

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
            "spec": self.spec.to_dict(),
            "status": self.status,
            "error": self.error,
            "samples": list(m.samples) if m else [],
            "warmup": list(m.warmup) if m else [],
            "repeat": m.repeat if m else 1,
            "rounds": [list(pair) for pair in m.rounds] if m else [],
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
            rounds = tuple((int(n), int(w)) for n, w in record.get("rounds", ()))
            measurement = Measurement(samples, warmup, int(record["repeat"]), rounds)
        return cls(
            uid=record["uid"],
            created_at=record["created_at"],
            sweep=record["sweep"],
            spec=RunSpec.from_dict(record["spec"]),
            status=record["status"],
            error=record["error"],
            measurement=measurement,
            peak_memory=record["peak_memory"],
            peak_memory_meaning=record["peak_memory_meaning"],
            environment=record["environment"],
            metrics=record["metrics"],
        )

    def to_dict(self, *, label: str) -> dict[str, Any]:
        """Everything, raw samples included, in plain JSON types, with the configuration's
        `label` (the lever registry's `accelbench.levers.label(spec)`)."""
        out: dict[str, Any] = {
            "id": self.id,
            "uid": self.uid,
            "created_at": self.created_at,
            "sweep": self.sweep,
            "spec": self.spec.to_dict(),
            "label": label,
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
            out["processes"] = m.processes
            out["rounds"] = [list(pair) for pair in m.rounds]
            spread = m.spread
            out["spread"] = None if spread is None else asdict(spread)
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

# Every field of a result's record (`Result.to_record`); "rounds" may be missing (older files)
RECORD_FIELDS = frozenset({*_RECORD_TYPES, "rounds"})


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
    _check_spec(record["spec"])
    environment = record["environment"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in environment.items()):
        raise ValueError("environment must map names to text")
    if not all(map(_is_seconds, record["samples"] + record["warmup"])):
        raise ValueError("samples must be positive, finite numbers of seconds")
    if record["repeat"] < 1:
        raise ValueError("repeat must be 1 or more")
    _check_rounds(record.get("rounds", []))
    for key in ("repeat", "peak_memory"):
        _check_integer(key, record[key])
    check(record["metrics"])


def _check_rounds(rounds: Any) -> None:
    """Samples and warm-ups per process: a list of [samples, warm-ups] pairs of counts (that
    they add up is the Measurement's to check)."""
    if not isinstance(rounds, list) or not all(
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**63 for n in pair)
        for pair in rounds
    ):
        raise ValueError("rounds must be a list of [samples, warm-ups] pairs of counts")


def _is_seconds(value: Any) -> bool:
    """A positive, finite number: Infinity would list as 0 it/s; a bool is no number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value) and value > 0
    except OverflowError:  # an int too large for a float is not a time either
        return False


_SQLITE_INTEGERS = range(-(2**63), 2**63)  # what an INTEGER column holds


def _check_integer(name: str, value: Any) -> None:
    if isinstance(value, int) and value not in _SQLITE_INTEGERS:
        raise ValueError(f"{name!r} is beyond the integers a database holds (64 bits)")


_SPEC_TYPES: dict[str, type | tuple[type, ...]] = {
    "str": str,
    "Precision": str,  # which words are the vocabulary's is RunSpec's own check
    "int": int,
}
_REQUIRED = ("workload", "device", "batch_size", "steps_per_block")
_OBJECTS = ("levers", "mode_args")  # name -> scalar objects: each value is its owner's to check


def _check_spec(spec: Any) -> None:
    """The spec's shape and types (legacy fields read as mode arguments); each lever's and
    mode argument's value is the lever's or the mode's to check."""
    declared = {f.name: f.type for f in fields(RunSpec) if f.name not in _OBJECTS}
    if isinstance(spec, dict):
        _check_legacy(spec)
        spec = _upgraded(spec)
    if (
        not isinstance(spec, dict)
        or set(spec) - {*declared, *_OBJECTS}
        or set(_REQUIRED) - set(spec)
    ):
        shown = sorted(spec) if isinstance(spec, dict) else type(spec).__name__
        raise ValueError(
            f"spec has fields {shown}; expected some of {sorted(declared)}, levers, mode_args"
        )
    for name, value in spec.items():
        kind = _SPEC_TYPES.get(str(declared.get(name)), dict)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"spec {name!r} has the wrong type ({type(value).__name__})")
    for name in ("batch_size", "steps_per_block"):
        if spec[name] < 1:
            raise ValueError(f"spec {name!r} must be 1 or more, not {spec[name]}")
        _check_integer(f"spec {name}", spec[name])
    for group in _OBJECTS:
        for name, value in spec.get(group, {}).items():
            if not isinstance(value, (str, int, float, bool)):
                raise ValueError(f"{group} {name!r} has the wrong type ({type(value).__name__})")
            _check_integer(f"{group} {name}", value)


def _check_legacy(spec: dict[str, Any]) -> None:
    """Generate's fields as versions before mode arguments wrote them: a count, or null."""
    for name in LEGACY_MODE_FIELDS:
        value = spec.get(name)
        if value is not None and (type(value) is not int or value < 1):
            raise ValueError(f"spec {name!r} must be a count of 1 or more, not {value!r}")
