"""Several processes per configuration: how many, what each one times, and how their results
become one.

One process is not the truth on a shared host: a fresh one can land 10-40% away from the last
(core.levels). So each configuration is measured in several worker processes ("rounds"), and
its interval is taken across them. How many:

- a fixed count (`--rounds N`), or with `--blocks N` a fixed count too (the N blocks spread over
  them, so the total stays what the user asked for);
- otherwise adaptive: `least` processes first, each with an equal share of the timed budget;
  then, once, the spread between their medians says how many processes an interval within
  `target` needs (pyperf's required_nprocesses: (1.96 sd / target) squared), and that many
  run, up to `most` and while the timed budget lasts. The count is decided once, not after
  every process: stopping when an interval happens to be narrow would make it too narrow.

A sweep runs its configurations' processes interleaved (workflows/benchmark): pass 1 runs the
first process of each configuration, pass 2 the second, so the host's drift hits each alike and
two configurations of one sweep can be compared process by process (`passes`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Any

from ..analysis.facts import LEFT_RUNNING, Probe, Rounds
from ..core.levels import RoundPolicy
from ..core.modes import mode_of
from ..core.result import Result
from ..core.stats import Measurement, summarize
from ..devices.power import JOULES_PER_SAMPLE, POWER, SAMPLES_PER_S_PER_WATT
from ..devices.state import MACHINE_STATE, PROBE_MACHINE_STATE, MachineState
from .facts import CPU_FALLBACK_OPS, OWN_STEPS, RANKS, Latency, Overhead
from .measure import StopRule

__all__ = [
    "Round",
    "first_rounds",
    "merge",
    "more_rounds",
    "round_stop",
]

Z95 = 1.96  # a normal 95% quantile: pyperf's rule for how many processes a spread needs


@dataclass(frozen=True)
class Round:
    """What one process of a configuration does: which it is, and its share of the timing."""

    index: int  # 0 for the first process, which also runs the once-only checks
    stop: StopRule  # this process's share of the configuration's timing
    planned: int  # the processes planned so far (the probe's time is shared among them)
    repeat: int | None = None  # blocks per sample, as the first process sized them

    @property
    def first(self) -> bool:
        return self.index == 0


def first_rounds(policy: RoundPolicy, stop: StopRule) -> int:
    """The processes run before any decision: the fixed count, or the policy's least; a fixed
    count of blocks spreads over no more processes than it has blocks."""
    count = policy.fixed if policy.fixed is not None else min(policy.least, policy.most)
    return min(count, stop.blocks) if stop.blocks is not None else count


def round_stop(policy: RoundPolicy, stop: StopRule, index: int) -> StopRule:
    """What process `index` times: its part of a fixed block count, or an equal share of the
    timed budget (later adaptive processes get the same share as the first ones)."""
    count = first_rounds(policy, stop)
    if stop.blocks is not None:
        return replace(stop, blocks=stop.blocks // count + (index < stop.blocks % count))
    share = replace(stop, max_time=stop.max_time / count)
    if share.time_cap is not None:
        share = replace(share, time_cap=share.time_cap / count)
    return share


def more_rounds(policy: RoundPolicy, stop: StopRule, result: Result) -> Rounds:
    """The configuration's process plan after its latest process: how many processes it gets in
    all (`planned`) and why; `complete` once they have all run, or once one failed."""
    facts = result.facts.get(Rounds)
    assert facts is not None  # every result of this engine carries its rounds
    done = len(facts.passes)
    facts = replace(facts, policy=policy.text())
    if result.measurement is None or facts.failed:
        why = facts.failed[-1] if facts.failed else "its first process failed"
        return replace(facts, planned=done, complete=True, reason=f"stopped: {why}")
    first = first_rounds(policy, stop)
    if done < first:
        return replace(facts, planned=first)
    if done == first and policy.fixed is None and stop.blocks is None:
        facts = replace(facts, **_decide(policy, stop, result.measurement))
    elif done == first:
        why = "--rounds" if policy.fixed is not None else f"--blocks {stop.blocks} spread evenly"
        facts = replace(facts, planned=first, reason=why)
    return replace(facts, complete=done >= facts.planned)


def _decide(policy: RoundPolicy, stop: StopRule, measured: Measurement) -> dict[str, Any]:
    """How many processes the spread of the first ones asks for, within the cap and budget."""
    done = measured.processes
    logs = [math.log(p.rate.median) for p in measured.per_process]
    sd = statistics.stdev(logs) if done > 1 else 0.0  # relative, as a spread of logs
    wanted = max(done, math.ceil((Z95 * sd / policy.target) ** 2))
    used = sum(measured.samples)
    affordable = done + max(0, math.floor((stop.max_time - used) / (used / done)))
    planned = min(wanted, policy.most, affordable)
    if planned >= wanted:
        reason = f"the spread between {done} processes ({sd:.1%}) asks for {wanted}"
    elif planned == policy.most:
        reason = f"the spread between processes ({sd:.1%}) asks for {wanted}; capped at {planned}"
    else:
        reason = (
            f"the spread between processes ({sd:.1%}) asks for {wanted}; the timed budget of "
            f"{stop.max_time:g} s allows {planned}"
        )
    return {"planned": planned, "reason": reason, "wanted": wanted}


def merge(previous: Result | None, latest: Result, pass_no: int) -> Result:
    """The configuration's result once its latest process has run: the processes' samples
    side by side, and what each process recorded combined. The first process's once-only
    figures (drift, latency, profile, FLOPs) stay as they are."""
    if previous is None:
        return _first(latest, pass_no)
    facts = previous.facts.get(Rounds)
    assert facts is not None and previous.measurement is not None
    if latest.measurement is None:  # the earlier processes stand; this one is a caveat
        return _failed(previous, latest, facts)
    measurement = previous.measurement.with_process(latest.measurement)
    rounds = replace(facts, passes=(*facts.passes, pass_no))
    metrics = _combined(previous.metrics, latest.metrics, measurement, previous)
    return replace(
        previous,
        measurement=measurement,
        peak_memory=_larger(previous.peak_memory, latest.peak_memory),
        metrics={**metrics, **rounds.to_metrics()},
    )


def _failed(previous: Result, latest: Result, facts: Rounds) -> Result:
    """The earlier processes' result, with the latest one's failure recorded beside it."""
    failed = f"process {len(facts.passes) + 1}: {latest.status}: {latest.error}"
    rounds = replace(facts, failed=(*facts.failed, failed))
    metrics = {
        **_overhead(previous.metrics, latest.metrics),
        **rounds.to_metrics(),
        **_joined(previous.metrics, latest.metrics, LEFT_RUNNING),
    }
    return replace(previous, metrics=metrics)


def _joined(a: dict[str, Any], b: dict[str, Any], key: str) -> dict[str, Any]:
    """A list both processes recorded under `key`, each item once."""
    joined = list(dict.fromkeys([*a.get(key, ()), *b.get(key, ())]))
    return {key: joined} if joined else {}


def _first(result: Result, pass_no: int) -> Result:
    """A configuration's first process: its samples marked as one process's."""
    rounds = Rounds(passes=(pass_no,)).to_metrics()
    m = result.measurement
    if m is None:
        return replace(result, metrics={**result.metrics, **rounds})
    marked = replace(m, rounds=((len(m.samples), len(m.warmup)),))
    return replace(result, measurement=marked, metrics={**result.metrics, **rounds})


def _combined(
    before: dict[str, Any], latest: dict[str, Any], measured: Measurement, first: Result
) -> dict[str, Any]:
    out = _overhead(before, latest)
    for key in (MACHINE_STATE, PROBE_MACHINE_STATE):
        a, b = MachineState.from_metrics(before, key), MachineState.from_metrics(latest, key)
        state = _states(a, b)
        if state is not None:
            out.update(state.to_metrics(key))
    probe = _probes(Probe.from_metrics(before), Probe.from_metrics(latest))
    if probe is not None:
        out.update(probe.to_metrics())
    out.update(_power(before, latest, measured, first))
    out.update(mode_of(first.spec).merge_processes(before, latest))  # the mode's own facts
    if isinstance(before.get(RANKS), list) and isinstance(latest.get(RANKS), list):
        out[RANKS] = _ranks(before[RANKS], latest[RANKS])
    latency = Latency.from_metrics(before)
    if latency is not None and latency.source == OWN_STEPS and measured.repeat == 1:
        out.update(Latency.from_steps(measured.samples, OWN_STEPS).to_metrics())
    for key in (CPU_FALLBACK_OPS, LEFT_RUNNING):
        out.update(_joined(before, latest, key))
    return out


def _overhead(before: dict[str, Any], latest: dict[str, Any]) -> dict[str, Any]:
    """Where the seconds went, summed over the processes."""
    a, b = Overhead.from_metrics(before), Overhead.from_metrics(latest)
    if b is None:
        return dict(before)
    seconds = {
        name: (getattr(a, name) or 0.0) + value
        for name, value in vars(b).items()
        if name != "setup_s" and value is not None
    }
    return Overhead.add(before, **seconds)


def _larger(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _states(a: MachineState | None, b: MachineState | None) -> MachineState | None:
    """The machine over all processes' samples: each figure at its worst."""
    if a is None or b is None:
        return a or b
    worse = b if (b.other_cpu_cores or 0) > (a.other_cpu_cores or 0) else a
    return replace(
        worse,
        seconds=a.seconds + b.seconds,
        steal_cores=_most(a.steal_cores, b.steal_cores),
        load_average_1m=_most(a.load_average_1m, b.load_average_1m),
        gpu_readings=a.gpu_readings + b.gpu_readings,
        sm_clock_min_mhz=_least(a.sm_clock_min_mhz, b.sm_clock_min_mhz),
        sm_clock_max_mhz=_most(a.sm_clock_max_mhz, b.sm_clock_max_mhz),
        memory_clock_min_mhz=_least(a.memory_clock_min_mhz, b.memory_clock_min_mhz),
        memory_clock_max_mhz=_most(a.memory_clock_max_mhz, b.memory_clock_max_mhz),
        temperature_max_c=_most(a.temperature_max_c, b.temperature_max_c),
        throttle_reasons=tuple(dict.fromkeys((*a.throttle_reasons, *b.throttle_reasons))),
        other_gpu_processes=max(a.other_gpu_processes, b.other_gpu_processes),
        other_gpu_pids=tuple(dict.fromkeys((*a.other_gpu_pids, *b.other_gpu_pids))),
        host_unavailable=a.host_unavailable or b.host_unavailable,
        gpu_unavailable=a.gpu_unavailable or b.gpu_unavailable,
    )


def _most(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


def _least(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _probes(a: Probe | None, b: Probe | None) -> Probe | None:
    """The probe of every process, side by side (the verdict pairs each with its process)."""
    if a is None or b is None:
        return a or b
    steps = (*a.steps, *b.steps)
    center = math.exp(sum(map(math.log, steps)) / len(steps))
    blocks = (a.blocks or 0) + (b.blocks or 0)
    return replace(
        a,
        step_time_s=center,
        blocks=blocks,
        steps=steps,
        growth=(*a.growth, *b.growth),
        paired_steps=(*a.paired_steps, *b.paired_steps),
    )


def _power(
    before: dict[str, Any], latest: dict[str, Any], measured: Measurement, first: Result
) -> dict[str, Any]:
    """Energy over every process's samples: joules and seconds add up."""
    a, b = before.get(POWER), latest.get(POWER)
    if not isinstance(a, dict) or not isinstance(b, dict):
        return {}
    joules, seconds = a["joules"] + b["joules"], a["seconds"] + b["seconds"]
    watts = joules / seconds
    samples = len(measured.samples) * measured.repeat * first.samples_per_block
    timed = sum(measured.samples)
    return {
        POWER: {**a, "joules": joules, "seconds": seconds, "average_watts": watts},
        JOULES_PER_SAMPLE: watts * timed / samples,
        SAMPLES_PER_S_PER_WATT: samples / timed / watts,
    }


def _ranks(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each data-parallel rank's samples over every process (ranks time one block a sample),
    its median rate taken anew."""
    out = []
    for first, later in zip(a, b, strict=False):
        samples = [*first.get("samples_s", ()), *later.get("samples_s", ())]
        rate = summarize([1.0 / s for s in samples]).median if samples else first["it_per_s"]
        per_it = first["samples_per_s"] / first["it_per_s"] if first.get("it_per_s") else 0.0
        out.append(
            {
                **first,
                "samples_s": samples,
                "it_per_s": rate,
                "samples_per_s": rate * per_it,
                "peak_memory": _larger(first.get("peak_memory"), later.get("peak_memory")),
            }
        )
    return out
