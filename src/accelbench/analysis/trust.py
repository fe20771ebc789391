"""What a careful reader should know before trusting a result: every caveat, as one value.

A result's caveats are data, not console text: `assess` makes them from what the result
recorded (its processes and their spread, its interval, the machine's state while it ran,
processes that failed, a path the developers never executed), the run stores them with the
result (`metrics.trust`), and every output shows them: the console, Markdown, HTML, CSV and
`--json`. Results stored before this existed get theirs made when they are read (`trust_of`).

A caveat is `decisive` when a conclusion drawn from the result cannot stand with it: the
machine was busy or throttling enough to move the figures. The bottleneck verdict then says
"undetermined", and optimize's recommendation says which of its figures carry one. The rest
inform (one process, a wide interval, a process that failed) and each is already part of the
interval the result prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..core.facts import Fact, fact
from ..core.result import Result
from ..core.stats import NOISY_CI_FRACTION
from ..devices.state import MachineState
from .facts import LEFT_RUNNING, OPTIMIZE_POLICY, QUICK, UNCHECKED, Rounds

__all__ = ["Caveat", "Trust", "assess", "machine_caveats", "trust_of", "with_trust"]

TRUST = "trust"  # the metrics key its record is stored under
# Warn, as hyperfine does about outliers, when the machine was not the benchmark's alone.
OTHER_CPU_WARN_CORES = 0.1  # other processes' CPU time, cores on average over the samples
STEAL_WARN_CORES = 0.1  # a hypervisor's other guests, the same way
# Past this much of other processes' CPU time a launch-bound step's figures move with it: a
# verdict or a recommendation drawn from them would be the load's.
OTHER_CPU_DECISIVE_CORES = 0.5
NOISY = "figures may be low and noisy"


@dataclass(frozen=True)
class Caveat:
    """One thing to know: what kind (a word to filter on), what it says, and whether a
    conclusion drawn from the result can stand with it."""

    # "quick", "processes", "spread", "noise", "failed", "incomplete", "machine", "platform"
    kind: str = ""
    text: str = ""
    decisive: bool = False


@fact(TRUST)
@dataclass(frozen=True)
class Trust(Fact):
    """Every caveat of one result."""

    caveats: tuple[Caveat, ...] = ()

    @property
    def decisive(self) -> tuple[Caveat, ...]:
        return tuple(c for c in self.caveats if c.decisive)

    @property
    def texts(self) -> list[str]:
        return [c.text for c in self.caveats]


def trust_of(result: Result) -> Trust:
    """The result's stored caveats, or, for a result stored before they were, made now."""
    return Trust.from_metrics(result.metrics) or assess(result)


def with_trust(result: Result, earlier: Sequence[Result] = ()) -> Result:
    """The result with its caveats assessed and stored in its metrics."""
    return replace(result, metrics={**result.metrics, **assess(result, earlier).to_metrics()})


def assess(result: Result, earlier: Sequence[Result] = ()) -> Trust:
    """Every caveat the result's record supports, the decisive ones first. `earlier`: other
    runs of the same configuration on the same machine, newest first, to check the interval
    against (`_history_caveats`)."""
    quick = result.facts.get(QUICK)
    caveats = [
        *([Caveat("quick", quick)] if quick else []),
        *_process_caveats(result),
        *_noise_caveats(result),
        *(machine_caveats(result.facts.get(MachineState))),
        *_history_caveats(result, earlier),
        *_left_running(result),
        *_platform_caveats(result),
    ]
    caveats.sort(key=lambda c: not c.decisive)
    return Trust(tuple(caveats))


def _process_caveats(result: Result) -> list[Caveat]:
    """How many processes the figures come from, and what became of the others."""
    m, rounds = result.measurement, result.facts.get(Rounds)
    out = []
    if m is not None and m.processes == 1:
        out.append(Caveat("processes", _one_process(rounds)))
    if rounds is None:
        return out
    stand = "the other processes' samples stand"
    out += [Caveat("failed", f"{text}; {stand}") for text in rounds.failed]
    if m is not None and not rounds.complete:
        out.append(
            Caveat(
                "incomplete",
                f"interrupted after {m.processes} of {rounds.planned} planned processes: "
                "run the same command with --resume to complete it",
            )
        )
    if rounds.wanted is not None and m is not None and rounds.wanted > m.processes:
        out.append(Caveat("processes", f"{m.processes} processes: {rounds.reason}"))
    return out


def _one_process(rounds: Rounds | None) -> str:
    if rounds is not None and rounds.policy == OPTIMIZE_POLICY:
        return (
            "1 process: its speedup's interval borrows fp32 eager's spread between processes "
            "(the same model on the same host); its own interval holds within the process"
        )
    stored = "" if rounds is not None else " (stored by an accelbench that ran one)"
    return (
        f"1 process{stored}: too few to bound the spread between processes; its interval "
        "holds within that process only"
    )


def _noise_caveats(result: Result) -> list[Caveat]:
    """A wide interval, and which level of noise made it."""
    m = result.measurement
    if m is None:
        return []
    out = []
    spread = m.spread
    if spread is not None and spread.dominant == "between processes" and spread.between > 0.01:
        out.append(
            Caveat(
                "spread",
                "the spread between processes dominates: their medians spread "
                f"±{spread.between:.1%} (sd), a process's samples ±{spread.within:.1%}; another "
                "run may land that far away, and more processes, not longer ones, narrow the "
                "interval",
            )
        )
    fraction = m.time.ci_half_width_fraction
    if fraction is not None and fraction > NOISY_CI_FRACTION:
        out.append(
            Caveat(
                "noise",
                f"noisy: the 95% CI is ±{fraction:.1%} of the median (over "
                f"{NOISY_CI_FRACTION:.0%}); quiet the machine, or run more processes "
                "(--max-rounds) or longer ones (--max-time)",
            )
        )
    elif fraction is None and m.processes == 1:
        out.append(
            Caveat(
                "noise",
                f"only {len(m.samples)} timed samples: a 95% CI of the median needs 6 or more",
            )
        )
    return out


def machine_caveats(state: MachineState | None, during: str = "the timed samples") -> list[Caveat]:
    """What else used the machine, or how the GPU throttled, `during` the region its state
    was read over; and what of the host or the GPU could not be read."""
    if state is None:
        return []
    out = []
    slack = state.cpu_resolution_cores or 0.0  # below it, a figure is the counters' ticking
    other = state.other_cpu_cores
    if other is not None and other > OTHER_CPU_WARN_CORES + slack:
        busiest = "; ".join(state.other_cpu_busiest)
        named = f" (busiest: {busiest})" if busiest else ""
        text = f"other processes used {_cores(other)} during {during}{named}: {NOISY}"
        out.append(Caveat("machine", text, other > OTHER_CPU_DECISIVE_CORES + slack))
    steal = state.steal_cores
    if steal is not None and steal > STEAL_WARN_CORES + slack:
        out.append(
            Caveat(
                "machine",
                f"the hypervisor ran other guests on {_cores(steal)}' worth of this machine's "
                f"CPU time during {during}: {NOISY}",
                steal > OTHER_CPU_DECISIVE_CORES + slack,
            )
        )
    out += _load_and_gpu(state, during)
    return out + [
        Caveat("machine", why) for why in (state.host_unavailable, state.gpu_unavailable) if why
    ]


def _cores(count: float) -> str:
    """ "1 core", "1.5 cores", "16 cores": two significant figures, and the noun to match."""
    figure = f"{count:.2g}"
    return f"{figure} core" if figure == "1" else f"{figure} cores"


def _load_and_gpu(state: MachineState, during: str) -> list[Caveat]:
    out = []
    load, cores = state.load_average_1m, state.cores
    if load is not None and cores is not None and load > cores:
        out.append(
            Caveat(
                "machine",
                f"the 1-minute load average was {load:.1f} (this benchmark's threads included), "
                f"above the {_cores(cores)}: {NOISY}",
                decisive=True,
            )
        )
    if state.throttle_reasons:
        reasons = ", ".join(state.throttle_reasons)
        out.append(
            Caveat(
                "machine",
                f"the GPU's clocks throttled during {during} ({reasons}; SM clock "
                f"{state.sm_clock_min_mhz}-{state.sm_clock_max_mhz} MHz, at most "
                f"{state.temperature_max_c} °C): figures may be low",
                decisive=True,
            )
        )
    if state.other_gpu_processes:
        pids = ", ".join(map(str, state.other_gpu_pids))
        out.append(
            Caveat(
                "machine",
                f"{state.other_gpu_processes} other process(es) used the GPU during "
                f"{during}{f' (pid {pids})' if pids else ''}: {NOISY}",
                decisive=True,
            )
        )
    return out


def _history_caveats(result: Result, earlier: Sequence[Result]) -> list[Caveat]:
    """Earlier runs of the configuration whose medians this interval does not hold: the host
    can stay fast or slow for longer than a run's processes take, and then no interval from
    one run can see it (BENCHMARKS.md, issue 25: seed-cnn's runs on the H200)."""
    m = result.measurement
    if m is None or m.rate.ci_low is None or m.rate.ci_high is None:
        return []
    low, high = m.rate.ci_low, m.rate.ci_high
    others = [
        (r.id, r.measurement.rate.median)
        for r in earlier
        if r.uid != result.uid and r.measurement is not None
    ]
    outside = [(number, median) for number, median in others if not low <= median <= high]
    if not outside:
        return []
    named = ", ".join(f"#{number} {median:.4g} it/s" for number, median in outside[:3])
    return [
        Caveat(
            "history",
            f"{len(outside)} of the {len(others)} earlier runs of this configuration on this "
            f"machine landed outside this interval ({named}): the host's state outlasted this "
            "run's processes; compare configurations side by side in one sweep, where it "
            "cancels",
        )
    ]


def _left_running(result: Result) -> list[Caveat]:
    """Processes started in the worker that outlived it (engine/reaper): the model's code, or
    a library it or a lever called (torch.compile's compile workers, on the H200, used a core
    while the samples ran)."""
    entries = [str(x) for x in result.metrics.get(LEFT_RUNNING) or ()]
    left = [entry for entry in entries if not entry.startswith(UNCHECKED)]
    unchecked = [entry.removeprefix(UNCHECKED) for entry in entries if entry not in left]
    out = []
    if unchecked:
        out.append(
            Caveat(
                "left running",
                "whether the worker left processes running is unknown: the look for them "
                f"after it ended failed ({unchecked[0]}); the measurement stands",
            )
        )
    if not left:
        return out
    return out + [
        Caveat(
            "left running",
            f"{len(left)} process(es) started in the worker (by the model's code or a library "
            f"it or a lever called, such as torch.compile's compile workers) outlived it "
            f"({', '.join(left[:3])}): they were stopped; anything they did while the samples "
            "ran used the machine too",
        )
    ]


def _platform_caveats(result: Result) -> list[Caveat]:
    """A device path the developers could not execute (MPS, Core ML, XPU, ROCm)."""
    caveat = result.environment.get("caveat", "")
    return [Caveat("platform", caveat)] if caveat else []
