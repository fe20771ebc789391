"""Charts as PNG bytes, drawn by matplotlib off-screen. Each returns None when the results hold
nothing to draw (no optimization ladder, no batch sweep), so a report shows only real charts.

Each chart is bounded, whatever the results: at most PANELS workloads of at most BARS bars
(the largest), LINES series, LADDERS optimize searches; its title says what was left out. A
chart of 10,000 bars was 64,000 pixels tall and took minutes to draw."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import levers
from ..analysis.explanation import CATEGORIES, Explanation
from ..analysis.facts import Drift
from ..analysis.history import Run, histories, history_before, judge
from ..core.modes import mode_of
from ..core.result import Result, machine_of
from ..errors import require
from ..levers import label
from ..workflows.facts import OptimizeTag
from .text import inert

if TYPE_CHECKING:
    from ..workflows.optimize import Tolerance

__all__ = [
    "history_chart",
    "ladder_chart",
    "optimize_chart",
    "memory_chart",
    "explain_chart",
    "parallel_chart",
    "scaling_chart",
    "throughput_chart",
]


PANELS = 8  # workloads a bar chart draws, those with the most results first
BARS = 25  # bars a panel draws, the largest
LINES = 12  # series a line chart draws, those with the most points
LADDERS = 4  # optimize searches drawn, the newest


def _pyplot() -> Any:
    matplotlib = require("matplotlib", "report", "charts")
    matplotlib.use("Agg")  # no display: draw to memory
    return require("matplotlib.pyplot", "report", "charts", package="matplotlib")


def _ok(results: Sequence[Result]) -> list[Result]:
    return [r for r in results if r.measurement is not None]


def _shown(text: str) -> str:
    """Stored text as matplotlib draws it literally: each `$` escaped, since a pair of them
    would be parsed as mathtext (and a malformed formula raises), control characters visible."""
    return inert(text).replace("$", r"\$")


def _series_name(r: Result) -> str:
    return f"{machine_of(r.environment)}/{r.spec.device} {label(r.spec)}"


def _without_batch(r: Result) -> str:
    """The series name with the batch size left out (label's third word), so one
    configuration at several batch sizes is one line of the scaling chart."""
    if not mode_of(r.spec).fixed_batch:  # its label has no batch size
        return _series_name(r)
    mode, precision, _, *rest = label(r.spec).split(" ")
    return " ".join([f"{machine_of(r.environment)}/{r.spec.device}", mode, precision, *rest])


def _png(figure: object) -> bytes:
    plt = _pyplot()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")  # type: ignore[attr-defined]
    plt.close(figure)
    return buffer.getvalue()


def throughput_chart(results: Sequence[Result]) -> bytes | None:
    """Samples/s per workload, one panel each (workloads differ by orders of magnitude), bars
    sorted, each with the 95% interval of its median from the raw samples."""
    ok = _ok(results)
    if not ok:
        return None

    def bar(r: Result) -> tuple[float, float, float]:
        m = r.measurement
        assert m is not None
        per = r.samples_per_block
        low, high = m.rate.ci_low, m.rate.ci_high
        median = m.rate.median * per
        if low is None or high is None:  # too few samples for an interval: no whisker
            return median, median, median
        return median, low * per, high * per

    modes = {r.spec.mode: mode_of(r.spec) for r in ok}
    others = [f"{m.rate_unit} for {name}" for name, m in sorted(modes.items()) if m.rate_unit]
    unit = "; ".join(["samples/s", *others])
    return _panels(f"throughput ({unit}), median and 95% CI", ok, bar)


def memory_chart(results: Sequence[Result]) -> bytes | None:
    """Peak memory per workload, one panel each, sorted (one reading per result: no interval)."""
    ok = [r for r in _ok(results) if r.peak_memory]

    def bar(r: Result) -> tuple[float, float, float]:
        mib = (r.peak_memory or 0) / 2**20
        return mib, mib, mib

    return _panels("peak memory (MiB), one reading each", ok, bar) if ok else None


def _bar_label(r: Result) -> str:
    """Unique for each bar: the result's id, then what it is."""
    return f"#{r.id} {_series_name(r)}" if r.id is not None else _series_name(r)


def _panels(
    title: str, results: Sequence[Result], bar: Callable[[Result], tuple[float, float, float]]
) -> bytes:
    """One horizontal bar panel per workload, largest first, with (median, low, high) whiskers."""
    plt = _pyplot()
    every: dict[str, list[Result]] = {}
    for r in results:
        every.setdefault(r.spec.workload, []).append(r)
    kept = sorted(every, key=lambda w: -len(every[w]))[:PANELS]
    by_workload = {w: sorted(every[w], key=lambda r: -bar(r)[0])[:BARS] for w in sorted(kept)}
    heights = [0.35 * len(rs) + 0.9 for rs in by_workload.values()]
    figure, axes_list = plt.subplots(
        len(by_workload),
        1,
        figsize=(9, sum(heights) + 0.6),
        squeeze=False,
        gridspec_kw={"height_ratios": heights, "hspace": 0.9 / max(1.0, sum(heights) / 4)},
    )
    for axes, (workload, members) in zip(axes_list[:, 0], by_workload.items(), strict=True):
        drawn = sorted(((bar(r), r) for r in members), key=lambda pair: -pair[0][0])
        values = [v for (v, _, _), _ in drawn]
        whiskers = [[v - lo for (v, lo, _), _ in drawn], [hi - v for (v, _, hi), _ in drawn]]
        spread = any(any(side) for side in whiskers)  # a single reading has none to draw
        positions = list(range(len(drawn)))
        axes.barh(
            positions,
            values,
            xerr=whiskers if spread else None,
            color="#4477aa",
            ecolor="#222",
            capsize=3,
        )
        axes.set_yticks(positions, [_shown(_bar_label(r)) for _, r in drawn], fontsize=8)
        axes.invert_yaxis()
        left_out = len(every[workload]) - len(members)
        more = f" (the {len(members)} largest of {len(every[workload]):,})" if left_out else ""
        axes.set_title(_shown(workload) + more, fontsize=9, loc="left")
        for y, ((value, _, high), _) in zip(positions, drawn, strict=True):
            text = f" {value:,.0f}" if value >= 100 else f" {value:.3g}"
            axes.text(max(value, high), y, text, va="center", fontsize=8)  # clear of the whisker
    if len(every) > len(kept):
        title += f"\n(the {len(kept)} workloads with the most results of {len(every)})"
    figure.suptitle(title)
    return _png(figure)


def ladder_chart(results: Sequence[Result]) -> bytes | None:
    """Speedup of each optimized configuration over fp32 eager of the same sweep (measured side
    by side), per workload, with the bootstrap 95% interval of the ratio."""
    from ..analysis.compare import speedup

    ok = _ok(results)
    # The newest result of each configuration in each sweep on each machine.
    by_spec = {(machine_of(r.environment), r.sweep, r.spec): r for r in reversed(ok)}
    ratios: dict[int, tuple[float, float, float]] = {}
    drawn = []
    for r in ok:
        if r.facts.get(OptimizeTag) is not None:
            continue  # drawn with its drift by optimize_chart
        base = by_spec.get((machine_of(r.environment), r.sweep, levers.eager(r.spec)))
        if base is None or base.spec == r.spec or base.measurement is None:
            continue
        found = speedup(r, base)
        high = found.ratio if found.no_interval else found.high
        low = found.ratio if found.no_interval else found.low
        ratios[id(r)] = (found.ratio, low, high)
        drawn.append(r)
    if not drawn:
        return None
    title = "speedup over fp32 eager of the same sweep (ratio of medians, 95% CI)"
    return _panels(title, drawn, lambda r: ratios[id(r)])


def scaling_chart(results: Sequence[Result]) -> bytes | None:
    """Samples/s against batch size, for configurations measured at two batch sizes or more."""
    series: dict[str, list[tuple[int, float]]] = {}
    for r in _ok(results):
        key = f"{r.spec.workload}: {_without_batch(r)}"
        series.setdefault(key, []).append((r.spec.batch_size, r.samples_per_second or 0.0))
    series = {k: sorted(set(v)) for k, v in series.items() if len({b for b, _ in v}) > 1}
    series = dict(sorted(series.items(), key=lambda item: -len(item[1]))[:LINES])
    if not series:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(9, 4.5))
    for name, points in series.items():
        axes.plot([b for b, _ in points], [s for _, s in points], marker="o", label=_shown(name))
    axes.set_xscale("log", base=2)
    axes.set_xlabel("batch size")
    axes.set_ylabel("samples/s")
    axes.set_title("scaling with batch size")
    axes.legend(fontsize=7)
    return _png(figure)


def parallel_chart(results: Sequence[Result]) -> bytes | None:
    """Aggregate samples/s and scaling efficiency against the number of data-parallel processes,
    for configurations measured with more than one process."""
    series: dict[str, dict[int, Result]] = {}
    for r in _ok(results):
        one_process = replace(r, spec=levers.find_lever("processes").assign(r.spec, 1))
        key = f"{r.spec.workload}: {_series_name(one_process)}"
        series.setdefault(key, {}).setdefault(r.spec.processes, r)
    series = {k: v for k, v in series.items() if len(v) > 1}
    series = dict(sorted(series.items(), key=lambda item: -len(item[1]))[:LINES])
    if not series:
        return None
    plt = _pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    for name, by_count in series.items():
        counts = sorted(by_count)
        shown = _shown(name)
        left.plot(
            counts, [by_count[n].samples_per_second or 0.0 for n in counts], marker="o", label=shown
        )
        single = by_count[counts[0]].samples_per_second or 0.0
        efficiency = (
            [(by_count[n].samples_per_second or 0.0) / (n * single) * 100 for n in counts]
            if counts[0] == 1 and single
            else []
        )
        if efficiency:
            right.plot(counts, efficiency, marker="o", label=shown)
    left.set(xlabel="processes", ylabel="aggregate samples/s", title="data-parallel throughput")
    right.set(
        xlabel="processes", ylabel="% of N x one process", title="scaling efficiency", ylim=(0, 110)
    )
    left.legend(fontsize=7)
    return _png(figure)


def optimize_chart(results: Sequence[Result]) -> bytes | None:
    """Each `accelbench optimize` ladder: speedup over fp32 eager beside drift, per variant;
    variants whose drift breaks the ladder's tolerance are drawn in red."""
    ladders: dict[str, list[Result]] = {}
    for r in reversed(_ok(results)):  # oldest first: the ladder's own order
        if r.facts.get(OptimizeTag) is not None:
            ladders.setdefault(r.sweep, []).append(r)
    ladders = {k: v for k, v in ladders.items() if _baseline(v) is not None}
    ladders = dict(list(ladders.items())[-LADDERS:])  # the newest searches
    if not ladders:
        return None
    plt = _pyplot()
    rows = sum(len(v) for v in ladders.values())
    figure, axes = plt.subplots(
        len(ladders), 2, figsize=(11, 0.4 * rows + 1.5 * len(ladders)), squeeze=False
    )
    for (speed_axes, drift_axes), members in zip(axes, ladders.values(), strict=True):
        _draw_ladder(speed_axes, drift_axes, members)
    figure.suptitle("red: a variant refused by the search's tolerance", fontsize=9, x=0.99,
                    ha="right")  # fmt: skip
    figure.tight_layout()
    return _png(figure)


def _tag(r: Result) -> OptimizeTag:
    """The ladder's tag on one of its results (the caller picked tagged results only)."""
    tag = r.facts.get(OptimizeTag)
    assert tag is not None
    return tag


def _baseline(members: list[Result]) -> Result | None:
    return next((r for r in members if _tag(r).variant == "fp32 eager"), None)


def _drawn_drift(drift: Drift | None) -> float:
    """Where a drift bar ends on the log axis: one not finite or not measured at 1 (100%). A
    generation's is its logit error as a share of their spread (a record since issue 27)."""
    error = drift.max_rel_error if drift else None
    if drift is not None and drift.by_spread:
        error = drift.spread_error
    return 1.0 if error is None else max(error, 1e-9)


def _tolerance(base: Result) -> Tolerance | None:
    """The ladder's tolerance as stored with its fp32 eager result."""
    from ..workflows.optimize import Tolerance  # here: the optimize workflow imports torch

    stored = _tag(base).tolerance
    if not stored:
        return None
    return Tolerance.from_stored(stored)


def _draw_ladder(speed_axes: Any, drift_axes: Any, members: list[Result]) -> None:
    base = _baseline(members)
    assert base is not None and base.measurement is not None
    names = [_tag(r).variant for r in members]
    speedups = [
        r.measurement.rate.median / base.measurement.rate.median if r.measurement else 0.0
        for r in members
    ]
    drifts = [_drawn_drift(r.facts.get(Drift)) for r in members]
    tolerance = _tolerance(base)
    colors = [
        "#aa3377"
        if tolerance and r is not base and tolerance.breach(r.facts.get(Drift))
        else "#4477aa"
        for r in members
    ]
    positions = list(range(len(names)))
    speed_axes.barh(positions, speedups, color=colors)
    speed_axes.axvline(1.0, color="#888", linewidth=0.8)
    speed_axes.set_yticks(positions, [_shown(n) for n in names], fontsize=8)
    speed_axes.invert_yaxis()
    speed_axes.set_xlabel("speedup over fp32 eager (ratio of medians)")
    spec = base.spec
    # Each title stays over its own axes (wrapped to its width, one left, one right): centred,
    # a long workload name ran into the drift panel's title
    ladder = f"{spec.workload} {spec.mode} b{spec.batch_size} on {spec.device}"
    speed_axes.set_title(_wrapped(_shown(ladder), 52), loc="left", fontsize=10)
    drift_axes.barh(positions, drifts, color=colors)
    drift_axes.set_xscale("log")
    drift_axes.set_yticks(positions, [""] * len(names))
    drift_axes.invert_yaxis()
    by_spread = any((d := r.facts.get(Drift)) and d.by_spread for r in members)
    drift_axes.set_xlabel(
        "drift: logit error / spread of fp32's logits (log scale)"
        if by_spread
        else "drift: max relative output error vs fp32 (log scale)"
    )
    if tolerance:
        limit = tolerance.max_spread_error if by_spread else tolerance.max_rel_error
        drift_axes.axvline(limit, color="#aa3377", linestyle="--", linewidth=1)
        drift_axes.set_title(f"tolerance {limit:g} (dashed)", loc="right", fontsize=10)


def _wrapped(text: str, width: int) -> str:
    """Lines of at most `width` characters, a long word (a path) broken where it must be."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width, break_long_words=True)) or text


def explain_chart(results: Sequence[Result]) -> bytes | None:
    """Each profiled configuration's step as one bar, split into its categories' shares."""
    explained = [(r, r.facts.get(Explanation)) for r in results]
    shown = [(r, e) for r, e in explained if e is not None and e.shares()][:BARS]  # newest
    if not shown:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(9, 0.5 * len(shown) + 1.8))
    colors = plt.get_cmap("tab20").colors
    for y, (_, found) in enumerate(shown):
        shares = dict(found.shares())
        left = 0.0
        for i, name in enumerate(CATEGORIES):
            width = shares.get(name, 0.0)
            if width > 0:
                kept = "_" + name if y else name  # one legend entry per category
                axes.barh(y, width * 100, left=left, color=colors[i % len(colors)], label=kept)
                left += width * 100
    axes.set_yticks(
        list(range(len(shown))),
        [_shown(f"#{r.id} {r.spec.workload}: {_series_name(r)}") for r, _ in shown],
        fontsize=8,
    )
    axes.invert_yaxis()
    axes.set_xlim(0, 100)
    axes.set_xlabel("share of the measured step (%)")
    axes.set_title("where the step's time went (profiled after the timed samples)")
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=4)
    return _png(figure)


GATE_THRESHOLD = 0.05  # the history chart marks verdicts at compare's default threshold
_VERDICT_COLORS = {"REGRESSION": "red", "faster": "green"}
ANNOTATED = 12  # runs outside their band a panel names in text, beyond: by colour only


def history_chart(results: Sequence[Result]) -> bytes | None:
    """Each configuration's runs on a machine over time (at least 2): its rate with the
    within-run 95% CI as error bars, the prediction band from the runs before each point, and
    the gate's verdict on the points outside their band (as asv and conbench draw them)."""
    grouped = histories(results)
    shown = sorted(
        ((k, runs) for k, runs in grouped.items() if len(runs) >= 2), key=lambda kv: -len(kv[1])
    )
    if not shown:
        return None
    plt = _pyplot()
    panels = shown[:PANELS]
    figure, axes = plt.subplots(len(panels), 1, figsize=(11, 3 * len(panels)), squeeze=False)
    for ax, ((spec, machine), runs) in zip(axes[:, 0], panels, strict=True):
        _history_panel(ax, runs, grouped)
        ax.set_title(_shown(f"{spec.workload} on {machine}/{spec.device}: {label(spec)}"))
    left_out = len(shown) - len(panels)
    if left_out:
        figure.suptitle(f"{left_out} configuration(s) with fewer runs not drawn", fontsize=8)
    figure.tight_layout()
    return _png(figure)


def _history_panel(ax: Any, runs: Sequence[Result], grouped: Any) -> None:
    """One configuration's runs, oldest first, by index, with its band and verdicts."""
    xs = list(range(1, len(runs) + 1))
    points = [Run.of(r) for r in runs]
    rates = [p.rate for p in points]
    below = [p.rate - p.low if p.low is not None else 0.0 for p in points]
    above = [p.high - p.rate if p.high is not None else 0.0 for p in points]
    judged = [judge(r, history_before(r, grouped), GATE_THRESHOLD) for r in runs]
    band = [j.history.prediction for j in judged]
    low = [b.low if b else float("nan") for b in band]
    high = [b.high if b else float("nan") for b in band]
    ax.fill_between(xs, low, high, alpha=0.2, step="mid", label="95% prediction (runs before)")
    ax.errorbar(xs, rates, yerr=[below, above], fmt="o", capsize=3, label="run (95% CI)")
    outside = [(x, rate, _said(j.verdict)) for x, rate, j, b in zip(xs, rates, judged, band,
               strict=True) if b is not None and not b.holds(rate)]  # fmt: skip
    for said in dict.fromkeys(s for _, _, s in outside):  # one line a verdict, not a point
        marked = [(x, rate) for x, rate, s in outside if s == said]
        ax.plot(*zip(*marked, strict=True), "x", color=_VERDICT_COLORS.get(said, "k"),
                markersize=9, label=f"outside its band: {said}")  # fmt: skip
    if len(outside) <= ANNOTATED:  # more would overlap unread; the legend names the marks
        for x, rate, said in outside:
            ax.annotate(said, (x, rate), textcoords="offset points", xytext=(4, 6),
                        fontsize=7, color=_VERDICT_COLORS.get(said, "k"))  # fmt: skip
    ax.set_xlabel(f"run, oldest first ({runs[0].created_at[:10]} to {runs[-1].created_at[:10]})")
    ax.set_ylabel("samples/s")
    # Beside the panel: matplotlib's "best" place is searched against every point drawn, the
    # slowest part of a report of thousands of runs.
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _said(verdict: str) -> str:
    """A verdict as the chart writes it beside a run outside its band."""
    return verdict if verdict != "ok" else f"ok: within {GATE_THRESHOLD:.0%}"
