"""Latency against load for served configurations (mode serve), as a PNG: each Server run of
the search is a point at its target QPS, its p50 and p99 latency LoadGen measured, and the p99
bound is a line. A classifier's latency is the whole answer's; a language model's Server is
bounded on two others (modes/serve_lm), its time to first token and its time per output token,
each drawn in a panel of its own. A VALID run is a filled marker, an INVALID one an open
marker, so where the bound was lost shows. Drawn by matplotlib off-screen, as render/charts is."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from ..core.mode_options import ModeOption
from ..core.result import Result, machine_of
from ..levers import label
from ..modes.serve import LATENCY_BOUND, TPOT_BOUND, TTFT_BOUND, Served, ServedRun
from .charts import LINES, _png, _pyplot, _shown

__all__ = [
    "ANSWER",
    "FIRST_TOKEN",
    "PER_TOKEN",
    "Latency",
    "LoadPoint",
    "latency_chart",
    "load_series",
]


@dataclass(frozen=True)
class Latency:
    """One latency LoadGen reports for a Server run, and the mode option that bounds its p99."""

    title: str
    bound: ModeOption
    p50_ms: Callable[[ServedRun], float | None]
    p99_ms: Callable[[ServedRun], float | None]


ANSWER = Latency("latency", LATENCY_BOUND, attrgetter("p50_ms"), attrgetter("p99_ms"))
FIRST_TOKEN = Latency(
    "time to first token", TTFT_BOUND, attrgetter("ttft_p50_ms"), attrgetter("ttft_p99_ms")
)
PER_TOKEN = Latency(
    "time per output token", TPOT_BOUND, attrgetter("tpot_p50_ms"), attrgetter("tpot_p99_ms")
)


LATENCIES = (ANSWER, FIRST_TOKEN, PER_TOKEN)


@dataclass(frozen=True)
class LoadPoint:
    target_qps: float
    p50_ms: float
    p99_ms: float
    valid: bool  # LoadGen's verdict
    process: int


def load_series(
    results: Sequence[Result], latency: Latency = ANSWER
) -> dict[str, tuple[float, list[LoadPoint]]]:
    """Each served configuration with Server runs bounded on `latency`: its name -> (its p99
    bound in ms, its Server runs by target QPS, every process's); those with the most runs
    first, LINES at most."""
    series: dict[str, tuple[float, list[LoadPoint]]] = {}
    for r in results:
        served, bound = r.facts.get(Served), latency.bound.value(r.spec)
        if served is None or not isinstance(bound, (int, float)):
            continue
        points = sorted(_points(served, latency), key=lambda p: (p.target_qps, p.process))
        if points:
            name = f"{r.spec.workload}: {machine_of(r.environment)}/{r.spec.device} {label(r.spec)}"
            series[name] = (float(bound), points)
    return dict(sorted(series.items(), key=lambda item: -len(item[1][1]))[:LINES])


def _points(served: Served, latency: Latency) -> list[LoadPoint]:
    """The Server runs that have both of `latency`'s figures."""
    points = []
    for run in served.runs:
        p50, p99 = latency.p50_ms(run), latency.p99_ms(run)
        if run.scenario == "server" and p50 is not None and p99 is not None:
            points.append(LoadPoint(run.target_qps, p50, p99, run.valid, run.process))
    return points


def latency_chart(results: Sequence[Result]) -> bytes | None:
    """A panel per latency some result's Server runs are bounded on (a classifier's answer, a
    language model's first token and output tokens): p50 (dashed) and p99 (solid) against
    Server's target QPS, the bound dotted; None where no result has a Server run."""
    every = [(latency, load_series(results, latency)) for latency in LATENCIES]
    panels = [(latency, series) for latency, series in every if series]
    if not panels:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(len(panels), 1, figsize=(9, 5 * len(panels)), squeeze=False)
    for (latency, series), ax in zip(panels, axes[:, 0], strict=True):
        _draw(ax, latency, series)
    return _png(figure)


def _draw(axes: Any, latency: Latency, series: dict[str, tuple[float, list[LoadPoint]]]) -> None:
    """One panel: each configuration's p99 and p50 against target QPS, and its bound."""
    for name, (bound, points) in series.items():
        qps = [p.target_qps for p in points]
        (line,) = axes.plot(qps, [p.p99_ms for p in points], label=f"{_shown(name)} p99")
        color = line.get_color()
        axes.plot(qps, [p.p50_ms for p in points], linestyle="--", color=color, label="p50")
        for p in points:
            face = color if p.valid else "none"
            axes.scatter([p.target_qps], [p.p99_ms], color=color, facecolors=face, zorder=3)
        axes.axhline(bound, linestyle=":", color=color, label=f"bound {bound:g} ms")
    axes.set(
        xlabel="Server target QPS (LoadGen's Poisson arrivals)",
        ylabel=f"{latency.title} (ms), LoadGen's",
        title=f"{latency.title} against load: p99 (filled: VALID, open: INVALID) and p50",
    )
    axes.legend(fontsize=7)
