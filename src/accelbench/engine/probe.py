"""The verdict's probe: the configuration at a quarter of the batch, timed in alternation with
the configuration itself.

Launch-bound or not is a ratio: how much longer a step takes at the batch than at a quarter of
it. On a shared host a process's speed drifts (the H200's per-process medians moved by up to
40% between processes of one run, and within a run too), so the two step times must be taken
side by side: after the main samples, with both models built, samples of steps at the batch and
at the probe's batch alternate (in ABBA order, so that neither always goes first), and each
adjacent pair gives one ratio. The process's ratio is their median; the verdict takes the processes'
ratios to an interval (analysis/metrics).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from typing import Any

from ..analysis.facts import Probe
from ..backends import Runnable, build
from ..core.stats import median_ci
from ..devices import Device
from ..devices.state import PROBE_MACHINE_STATE
from ..errors import one_line
from ..levers import warmup_needed
from ..workloads import Workload
from .facts import PROBE_ERROR
from .measure import StopRule, time_blocks
from .rounds import Round

__all__ = ["PROBE_DIVISOR", "PROBE_STOP", "paired_probe"]

PROBE_DIVISOR = 4  # the verdict compares the step at the batch with the step at batch / 4
# Over all of a configuration's processes: its pairs' seconds (both sides), shared among them.
PROBE_STOP = StopRule(warmup=2, max_time=2.0, min_sample_s=0.05)
MIN_PAIRS = 5  # a median of pairs, not a pair
MAX_PAIRS = 200


def paired_probe(
    main: Runnable, workload: Workload, device: Device, main_step_s: float, process: Round
) -> dict[str, Any]:
    """Time `main`'s configuration at a quarter of its batch in alternation with `main` itself;
    the probe's step and the ratio of the two, for this process (`Probe`), or why there is
    none. `main` is built and warm (its samples are done, its median step `main_step_s`)."""
    spec = main.spec
    batch = max(1, spec.batch_size // PROBE_DIVISOR)
    if batch == spec.batch_size:
        return {}
    rule = replace(PROBE_STOP, max_time=PROBE_STOP.max_time / process.planned)
    if not process.first:  # compilation caches and allocators are warm after the first
        rule = replace(rule, warmup=1)
    rule = rule.at_least(warmup_needed(spec))
    try:
        probe = build(replace(spec, batch_size=batch), workload, device)
        with device.state_meter() as meter:  # a busy machine can fake a ratio (issue 27)
            pairs = _pairs(main, probe, main_step_s, rule)
    except Exception as exc:  # the main result stands; say why there is no verdict input
        return {PROBE_ERROR: one_line(exc)}
    state = meter.state.to_metrics(PROBE_MACHINE_STATE) if meter.state else {}
    ratios = [m / p for m, p in pairs]
    step = statistics.median(p for _, p in pairs)
    paired = statistics.median(m for m, _ in pairs)  # the other side of the same pairs
    interval = median_ci(ratios) or (None, None)
    return (
        Probe(
            batch,
            step,
            len(pairs),
            steps=(step,),
            growth=(statistics.median(ratios),),
            growth_ci_low=interval[0],
            growth_ci_high=interval[1],
            paired_steps=(paired,),
        ).to_metrics()
        | state
    )


def _pairs(
    main: Runnable, probe: Runnable, main_step_s: float, rule: StopRule
) -> list[tuple[float, float]]:
    """(main step, probe step) seconds of adjacent samples, until the rule's time is up. A
    sample is as many steps as last `min_sample_s`, so that synchronizing at its ends costs
    the two sides alike and little."""
    warmup = rule.warmup * main.spec.steps_per_block  # as many steps as the blocks held
    probe_step_s = 0.0
    for _ in range(warmup):
        probe_step_s = time_blocks(probe.step, probe.timer, 1)
    sides = [(main, _count(rule, main_step_s)), (probe, _count(rule, probe_step_s))]
    pairs: list[tuple[float, float]] = []
    elapsed = 0.0
    while len(pairs) < MAX_PAIRS and (elapsed < rule.max_time or len(pairs) < MIN_PAIRS):
        seconds = {}
        for prep, count in sides if len(pairs) % 2 == 0 else sides[::-1]:  # ABBA
            seconds[id(prep)] = time_blocks(prep.step, prep.timer, count)
            elapsed += seconds[id(prep)]
        pairs.append((seconds[id(main)] / sides[0][1], seconds[id(probe)] / sides[1][1]))
    return pairs


def _count(rule: StopRule, step_s: float) -> int:
    """Steps in one sample: enough to last `min_sample_s`."""
    return max(1, math.ceil(rule.min_sample_s / step_s)) if step_s > 0 else 1
