"""The explanation block: where one configuration's step time went (explain, run --profile).

Plain lines, shared with `report --format markdown`; each line says what its figure is of.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...analysis.explanation import IDLE, Explanation
from ...analysis.verdict import Bottleneck
from ...core.result import Result
from ...engine.facts import EXPLAIN_FAILURE
from ...levers import label
from ..text import format_seconds, inert

__all__ = ["explanation_blocks", "explanation_lines"]

SHOWN = 5  # operators and kernels listed in the console


def explanation_blocks(results: Sequence[Result]) -> str:
    """A block for each result that was profiled (or says why it was not), "" for none."""
    out = []
    for r in results:
        lines = explanation_lines(r, verdict=False)  # the table's notes above carry it
        if lines:
            head = f"why: {r.spec.workload} {r.spec.device} {label(r.spec)}"
            # stored strings (operator names, the caller's path) are shown, never interpreted
            out.append("\n".join(inert(x) for x in [head, *(f"  {line}" for line in lines)]))
            out.append("\n")
    return "".join(out)


def explanation_lines(r: Result, verdict: bool = True) -> list[str]:
    """The explanation's lines, without a heading; [] when the result was not profiled."""
    found = r.facts.get(Explanation)
    if found is None:
        reason = r.facts.get(EXPLAIN_FAILURE)
        return [f"not profiled: {reason}"] if reason else []
    bottleneck = r.facts.get(Bottleneck) if verdict else None
    return [
        _profiled(found),
        *_busy(found),
        _categories(found),
        *_tops(found),
        *_syncs(found),
        *_on_cpu(found),
        *([f"verdict: {bottleneck.explanation}"] if bottleneck else []),
        *found.notes,
        *(
            [f"trace: {found.trace} (open it in ui.perfetto.dev or chrome://tracing)"]
            if found.trace
            else []
        ),
    ]


def _profiled(found: Explanation) -> str:
    passes = (
        "the host's operators"
        if found.activity == "host"
        else f"{found.activity} activity alone for the times, again with the host's operators"
    )
    text = (
        f"profiled {found.steps} steps after the timed samples ({passes}; no figure above "
        f"comes from them): {format_seconds(found.profiled_step_s)} a step"
    )
    measured = found.measured_step_s
    if not measured:
        return text
    diff = found.profiled_step_s / measured - 1
    why = "the profiler's own cost on the host" if diff > 0 else "the machine's noise between them"
    return (
        f"{text} against the measured median {format_seconds(measured)} "
        f"({diff:+.0%}: {why}); shares below are of the measured step"
    )


def _busy(found: Explanation) -> list[str]:
    share = found.busy_share
    if share is None or found.device_busy_s is None:
        return []
    lines = [
        f"device busy {share:.0%} of the step ({format_seconds(found.device_busy_s)} with a "
        f"kernel running); it waited on the host the other {1 - share:.0%}"
    ]
    mean = found.mean_kernel_s
    if found.kernels_per_step and mean is not None:
        lines.append(
            f"launches: {found.kernels_per_step:.0f} kernels a step, "
            f"{format_seconds(mean)} each on average"
        )
    return lines


def _categories(found: Explanation) -> str:
    parts = [
        f"{'idle' if name == IDLE else name} {share:.0%}"
        for name, share in sorted(found.shares(), key=lambda pair: -pair[1])
        if share >= 0.005
    ]
    basis = "device time" if found.busy_share is not None else "host time"
    return f"time by category ({basis}; idle = waiting on the host): " + ", ".join(parts)


def _tops(found: Explanation) -> list[str]:
    step = found.step_s
    on_device = found.busy_share is not None
    ops = [
        f"{o.name} {format_seconds(o.device_s if on_device else o.host_s)} "
        f"({(o.device_s if on_device else o.host_s) / step:.0%})"
        for o in found.top_operators[:SHOWN]
    ]
    listed = ", ".join(ops) or "no operator launched them (a captured graph replays its kernels)"
    lines = [f"top operators ({'device' if on_device else 'host'} time a step): {listed}"]
    if found.top_kernels:
        kernels = [
            f"{_short(k.name)} {format_seconds(k.device_s)} ({k.device_s / step:.0%})"
            for k in found.top_kernels[:SHOWN]
        ]
        lines.append("top kernels: " + ", ".join(kernels))
    return lines


def _short(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _syncs(found: Explanation) -> list[str]:
    if not found.syncs:
        return ["synchronizations inside the step: none found"]
    return [
        f"synchronization inside the step: {s.operator} x{s.per_step:g} a step, {s.cause}"
        + (f", at {s.where}" if s.where else "")
        for s in found.syncs
    ]


def _on_cpu(found: Explanation) -> list[str]:
    if not found.cpu_operators:
        return []
    return ["ran on the CPU, not the device: " + ", ".join(found.cpu_operators)]
