"""Latency against load for served configurations (mode serve), as a PNG: each Server run of
the search is a point at its target QPS, its p50 and p99 latency LoadGen measured, and the p99
bound is a line. A VALID run is a filled marker, an INVALID one an open marker, so where the
bound was lost shows. Drawn by matplotlib off-screen, as render/charts is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.result import Result, machine_of
from ..levers import label
from ..modes.serve import LATENCY_BOUND, Served
from .charts import LINES, _png, _pyplot, _shown

__all__ = ["LoadPoint", "latency_chart", "load_series"]


@dataclass(frozen=True)
class LoadPoint:
    target_qps: float
    p50_ms: float
    p99_ms: float
    valid: bool  # LoadGen's verdict
    process: int


def load_series(results: Sequence[Result]) -> dict[str, tuple[float, list[LoadPoint]]]:
    """Each served configuration with Server runs: its name -> (its p99 bound in ms, its
    Server runs by target QPS, every process's); those with the most runs first, LINES at most."""
    series: dict[str, tuple[float, list[LoadPoint]]] = {}
    for r in results:
        served, bound = r.facts.get(Served), LATENCY_BOUND.value(r.spec)
        if served is None or not isinstance(bound, (int, float)):
            continue
        points = sorted(
            (
                LoadPoint(run.target_qps, run.p50_ms, run.p99_ms, run.valid, run.process)
                for run in served.runs
                if run.scenario == "server"
            ),
            key=lambda p: (p.target_qps, p.process),
        )
        if points:
            name = f"{r.spec.workload}: {machine_of(r.environment)}/{r.spec.device} {label(r.spec)}"
            series[name] = (float(bound), points)
    return dict(sorted(series.items(), key=lambda item: -len(item[1][1]))[:LINES])


def latency_chart(results: Sequence[Result]) -> bytes | None:
    """p50 (dashed) and p99 (solid) latency against Server's target QPS, the bound dotted;
    None where no result has a Server run."""
    series = load_series(results)
    if not series:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(9, 5))
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
        ylabel="latency (ms), LoadGen's",
        title="latency against load: p99 (filled: VALID, open: INVALID) and p50",
    )
    axes.legend(fontsize=7)
    return _png(figure)
