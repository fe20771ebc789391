"""What is asked of all levers at once: a configuration's label, the levers it activates, why
it cannot run, specs built from lever values, checks of stored values, comparable dimensions."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..analysis.compare import BASE_DIMENSIONS, FASTEST, Dimension
from ..core.modes import check_stored_args, mode_of
from ..core.result import DEFAULT_BACKEND, RunSpec
from ..errors import UsageError
from .base import Lever, all_levers, find_lever

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload


def label(spec: RunSpec) -> str:
    """A short human name for the configuration, e.g. 'train bf16 b256 channels_last compile'."""
    mode = mode_of(spec)
    batch = f"b{spec.batch_size}" if mode.fixed_batch else ""  # serve's batches are formed
    parts = [spec.mode, spec.precision, batch, *mode.label_parts(spec)]
    parts += [lever.label(lever.value(spec)) for lever in all_levers() if lever.active(spec)]
    known = {lever.name for lever in all_levers()}
    # a lever stored by a plugin this process has not loaded still shows
    parts += [f"{name}={value}" for name, value in spec.levers if name not in known]
    if spec.backend != DEFAULT_BACKEND:
        parts.append(spec.backend)
    return " ".join(p for p in parts if p)


def spec_json(spec: RunSpec) -> dict[str, Any]:
    """A spec as --json shows it: its fields, its mode's arguments by name, and every lever's
    value by name, defaults too (a lever stored by a plugin this process has not loaded shows
    as stored)."""
    out = {k: v for k, v in spec.to_dict().items() if k not in ("levers", "mode_args")}
    out.update(mode_of(spec).ordered_args(spec))
    out.update(spec.levers)
    out.update({lever.name: lever.value(spec) for lever in all_levers() if lever.option})
    return out


def active_levers(spec: RunSpec) -> list[Lever]:
    """The levers `spec` asks for, in the order they apply."""
    return sorted(
        (lever for lever in all_levers() if lever.active(spec)), key=lambda lever: lever.stage
    )


def warmup_needed(spec: RunSpec) -> int:
    """The warm-up its `spec`'s levers need before timing, at least (0: what was asked)."""
    return max((lever.warmup(spec) for lever in active_levers(spec)), default=0)


def unsupported_reason(spec: RunSpec, device: Device, workload: Workload) -> str | None:
    """The first reason an active lever cannot run here, as 'lever: reason', or None."""
    for lever in active_levers(spec):
        reason = lever.unsupported(spec, device, workload)
        if not reason and mode_of(spec).decodes and not lever.generates:
            reason = f"not measured with mode {spec.mode} yet"
        if reason:
            return f"{lever.name}: {reason}"
    return None


def refused_by_model(spec: RunSpec, workload: Workload) -> str | None:
    """Why the model cannot take one of the spec's levers, found by running it (workers only);
    None when every active lever can apply."""
    for lever in active_levers(spec):
        reason = lever.refused_by_model(spec, workload)
        if reason:
            return reason
    return None


def spec_with(spec: RunSpec, **values: Any) -> RunSpec:
    """`spec` with each named lever set, e.g. spec_with(spec, channels_last=True).
    KeyError names the registered levers; ValueError an invalid value."""
    for name, value in values.items():
        lever = find_lever(name)
        lever.check(value)
        spec = lever.assign(spec, value)
    return spec


def check_levers(spec: RunSpec) -> None:
    """A stored or imported spec's lever values and mode arguments: ValueError names the
    first that is wrong. (Its precision the RunSpec checked as it was read.)"""
    for name, value in spec.levers:
        try:
            lever = find_lever(name)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        lever.check(value)
        if value == lever.default:
            raise ValueError(f"lever {name!r} is stored at its default {value!r}")
    check_stored_args(spec)


def eager(spec: RunSpec) -> RunSpec:
    """The plain configuration an optimized one is measured against: fp32, PyTorch, and every
    lever the optimization ladder tries at its default (threads and processes are kept)."""
    plain = replace(spec, precision="fp32", backend=DEFAULT_BACKEND)
    for lever in all_levers():
        if lever.ladder_groups and not lever.kept_by_eager:
            plain = lever.assign(plain, lever.default)
    return plain


# Whole configurations of one workload, mode and device (on one machine), each against the
# fastest: what a machine with one device can compare (compare's default there).
CONFIGURATION = Dimension(
    name="configuration",
    read=lambda r: label(r.spec),
    neutral=lambda spec: RunSpec(spec.workload, spec.device, 1, 1, mode=spec.mode),
    baseline=FASTEST,
)


def dimensions() -> dict[str, Dimension]:
    """What `compare --by` can compare: the base dimensions, whole configurations, then each
    lever's."""
    found = {**BASE_DIMENSIONS, CONFIGURATION.name: CONFIGURATION}
    for lever in all_levers():
        if lever.dimension:
            found[lever.dimension] = _dimension(lever)
    return found


def find_dimension(name: str) -> Dimension:
    """The dimension `compare --by NAME` means; UsageError names the valid ones."""
    found = dimensions()
    if name not in found:
        raise UsageError(f"cannot compare by {name!r}; valid: {', '.join(found)}")
    return found[name]


def _dimension(lever: Lever) -> Dimension:
    return Dimension(
        name=lever.dimension,
        read=lambda r: lever.word(lever.value(r.spec)),
        neutral=lambda spec: lever.assign(spec, lever.default),
        baseline=lever.baseline_word(),
    )


def ladder_groups() -> tuple[str, ...]:
    """What `optimize --levers` can name: each lever's groups of search variants."""
    return tuple(dict.fromkeys(g for lever in all_levers() for g in lever.ladder_groups))


def default_groups() -> tuple[str, ...]:
    """What `optimize` searches when `--levers` is not given: every group but the opt-in ones."""
    opt_in = {g for lever in all_levers() for g in lever.opt_in}
    return tuple(g for g in ladder_groups() if g not in opt_in)
