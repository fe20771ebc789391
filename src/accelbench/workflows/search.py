"""The optimization search: which levers to stack is decided by what was measured.

1. fp32 eager, the baseline every speedup is against, and its verdict: what bounds its step.
2. A greedy stack, in the order the verdict sets: the levers that relieve what bounds the step
   first (a lower precision where it is compute-bound, a CUDA graph where it is launch-bound),
   the rest in registration order. Each lever once, its variants on the best stack so far; one
   stays only where its gain over the stack lies above the keep threshold beyond noise (the
   95% interval above 1 + `threshold`), and of a lever's variants that stay, the fastest goes
   on, or the one the lever prefers (`Lever.preferred`: bf16 in training).
3. The late levers alone, against fp32 eager: a backend switch (ONNX Runtime fp32), int8 on
   it judged against it (`Variant.over`, measured first), pruning: they do not stack.
4. The stack's levers' alternatives not measured yet (the compile modes), each kept only where
   it beats the stack beyond the threshold.
5. Offered levers (a larger batch) on the best stack, doubling while it pays; never the
   recommendation, always shown with what they change.

A variant that fails (the model's `.view` refuses channels_last, a compile error, OOM) is a
finding: it is reported with its reason and the stack goes on without it. The budget bounds
the whole search: a variant that no longer fits is listed as not tried.

The process is the unit of noise (core.levels). fp32 eager runs in BASELINE_PROCESSES
processes and every other variant in one: its interval borrows fp32 eager's spread between
processes (analysis/compare's pooled interval), which settles the clear gains and losses at
once. Where a decision is close (the interval holds 1 + the threshold and the ratio is a gain
of CLOSE or the threshold or more), the search races before it decides: one more process at a
time for whichever side has fewer, up to RACE_MOST, while the budget lasts. A side's second
and third processes may take the budget held for the confirmation, never the part held for
the costly set-ups: settling which levers stack is worth more than a third confirming process
(llama-1b's bf16 was left out at 1.34x [0.82–2.18] on one process, with 8 s of room beside
150 s held, issue 39). The path says what the race did (`Trial.raced`).

The search measures through a callback, so tests drive it with results of their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..analysis.compare import Speedup, speedup
from ..analysis.facts import Drift, Generation
from ..analysis.verdict import Bottleneck, decode_bound
from ..backends import all_backends
from ..core.modes import mode_of
from ..core.result import Result, RunSpec
from ..devices import Device
from ..engine.facts import GAVE_UP_BELOW, Overhead
from ..levers import Lever, Variant, all_levers
from ..workloads import Workload
from .optimize import BASELINE, Rung, Tolerance, assess, recommend, stack_name

__all__ = [
    "Budget",
    "Judgement",
    "Search",
    "SearchOutcome",
    "Trial",
    "failure_text",
    "stack_name",
]

ALONE, STACK, ALTERNATIVE, OFFER = "alone", "stack", "alternative", "offer"
PAID, DRIFT = "paid", "drift"  # a Judgement's kinds beside ALONE and STACK
# fp32 eager runs in this many processes: their spread is the interval of every variant that
# ran in one (analysis/compare's pooled interval), so most variants need only one.
BASELINE_PROCESSES = 3
RACE_MOST = 4  # the processes a variant may reach while its decision is close
CLOSE = 0.03  # a gain under 3% is not worth more processes: too small to want
# A costly set-up lever's trial against fp32 eager's process: on the H200 resnet50's compile
# trial took 86 s, fp32 eager's processes about 17 s (BENCHMARKS.md, issue 39's branch).
SETUP_COST = 5.0
RESERVE_MOST = 0.5  # the share of the budget that may be held for them and the confirmation
# The recommendation is confirmed in this many full processes (no early stop); the budget
# holds CONFIRM_COST times fp32 eager's process for it (two more, each up to twice as long:
# a compiled one compiles again, from the search's cache).
CONFIRM_PROCESSES = 3
CONFIRM_COST = 4.0
# A trial is not started with less room than this share of fp32 eager's process: it would
# only be cut short.
LEAST_ROOM = 0.5


class Budget:
    """Seconds left for the whole search, on a clock tests can replace."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self.clock = seconds, clock
        self.start = clock()

    def left(self) -> float:
        return self.seconds - (self.clock() - self.start)

    def used(self) -> float:
        return self.clock() - self.start


@dataclass
class Trial:
    """One variant measured: why the search tried it, and what came of it."""

    rung: Rung
    result: Result
    phase: str  # "baseline", ALONE, STACK, ALTERNATIVE or OFFER
    why: str
    wall_s: float
    # What came of it as the search decided it, on the figures at the time; the path and --json
    # show `SearchOutcome.outcome_of(trial)`, on the figures with every process in.
    outcome: str = ""
    budget_cut: bool = False  # stopped because the budget ran out, not by its own fault
    # What its gain is judged against: fp32 eager for a variant alone, the stack it was tried
    # on, or a reference of its own (int8 against ONNX Runtime's fp32); None for fp32 eager.
    parent: Trial | None = None
    judged: Judgement | None = None  # the decision its outcome states, on a figure
    because: Judgement | None = None  # the figure its reason to be tried rests on
    # what racing did where its gain was undecided: "undecided after 1 process: measured
    # again, 3 processes" (one note a race; a trial two paths reached can be raced twice)
    raced: list[str] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        return self.result.measurement is not None


@dataclass
class Judgement:
    """A decision on a figure: `trial`'s gain over `over`, `then` as it stood when the search
    decided. Processes land after it (fp32 eager's, whose spread every single-process variant
    borrows, and a raced variant's), so what is shown is the figure with every process in, and
    the one at the time as well where the final one would have decided otherwise."""

    kind: str  # ALONE: what it came to alone; STACK: kept or left out; PAID: it paid alone
    trial: Trial
    over: Trial
    then: Speedup
    own: bool = False  # over a reference of its own (int8 over ONNX Runtime's fp32), named
    lead: str = ""  # DRIFT: the words that decided, which no process changes
    tail: str = ""  # words after the figure that no process changes (int8's accuracy cost)
    # the gain's interval must lie above 1 + this to pay (`optimize --keep-threshold`)
    threshold: float = 0.0


@dataclass
class SearchOutcome:
    trials: list[Trial] = field(default_factory=list)
    not_tried: list[tuple[str, str]] = field(default_factory=list)  # (variant, why not)
    # What the search did, in order: a variant measured, a decision in words, or a variant
    # measured before decided on again (a precision alone, then as the stack's alternative).
    steps: list[Trial | str | Judgement] = field(default_factory=list)
    wall_s: float = 0.0
    skipped_groups: set[str] = field(default_factory=set)  # the groups of variants not tried

    def skip(self, name: str, why: str, group: str = "") -> None:
        """`name` (of `group`) was not tried, for `why`: said once, however many paths reached
        it."""
        if (name, why) not in self.not_tried:
            self.not_tried.append((name, why))
        self.skipped_groups.add(group or name)

    @property
    def baseline(self) -> Trial | None:
        return self.trials[0] if self.trials else None

    def path(self, reasons: Sequence[str] = ()) -> list[str]:
        """The search's path in words: each variant, why it was tried and what came of it;
        `reasons[i]`, where given, says why trial i is known not to pay."""
        lines, n = [], 0
        for step in self.steps:
            if isinstance(step, str):
                lines.append(f"   {step}")
                continue
            if isinstance(step, Judgement):
                text = judgement_text(step, self.final(step))
                lines.append(f"   {step.trial.rung.name} again (measured above): {text}")
                continue
            why = "" if step.phase in (ALONE, "baseline") else f", because {self.why_of(step)}"
            text = self.outcome_of(step)
            outcome = f": {text}" if text else ""
            known = reasons[n] if n < len(reasons) and reasons[n] else ""
            n += 1
            lines.append(f"{n:2}. {step.rung.name} ({step.phase}{why}){outcome}")
            if GAVE_UP_BELOW in step.result.metrics and step.result.measurement is not None:
                timed = len(step.result.measurement.per_process[0].samples)
                lines[-1] += (
                    f" (its first process stopped after {timed} timed samples: even the "
                    "fastest was slower than the keep threshold asks)"
                )
            if step.raced:
                lines[-1] += f" ({'; '.join(step.raced)})"
            if known:
                lines[-1] += f" ({known})"
        return lines

    def final(self, judged: Judgement) -> Speedup:
        """The judged gain with every process in: as the table's figures are taken (fp32
        eager's spread lent to a side measured in one process)."""
        base = self.baseline
        spread = base.result if base is not None and base.measured else None
        return speedup(judged.trial.result, judged.over.result, spread_from=spread)

    def outcome_of(self, trial: Trial) -> str:
        """What came of `trial`, on the figures with every process in."""
        if trial.judged is None:
            return trial.outcome
        return judgement_text(trial.judged, self.final(trial.judged))

    def why_of(self, trial: Trial) -> str:
        """Why `trial` was tried, with the figure that reason rests on as it ended."""
        if trial.because is None:
            return trial.why
        final = self.final(trial.because)
        return f"{trial.why} ({_figure(trial.because, final)})"


_PAYS, _SMALL = "pays", "small"
_AGAINST = {"undetermined": "undetermined against", "slower": "slower than"}
_PLAIN = {_PAYS: "a gain beyond noise"}  # a category in words, after a figure


def _category(gain: Speedup, threshold: float = 0.0) -> str:
    """A gain as the search reads it: real and above the keep threshold, real but under it,
    too few processes to tell, a loss, or noise."""
    if gain.low > 1.0 + threshold:
        return _PAYS
    if gain.low > 1.0:
        return _SMALL
    if gain.no_interval:
        return "undetermined"
    return "slower" if gain.high < 1.0 else "within noise"


def _decision(judged: Judgement, gain: Speedup) -> str:
    """What `gain` decides for `judged`: alone, which of the categories; elsewhere whether
    it pays (kept on the stack, a reason to try it there)."""
    category = _category(gain, judged.threshold)
    return category if judged.kind == ALONE else str(category == _PAYS)


def _words(judged: Judgement, gain: Speedup) -> str:
    category, over = _category(gain, judged.threshold), judged.over.rung.name
    if category == _SMALL:  # real, but not worth a line of the user's code
        under = f"under the {judged.threshold:.0%} keep threshold"
        left = "left out" if judged.kind == STACK else "not kept"
        return f"{left}: a gain over {over}, but {under}"
    if judged.kind == STACK:
        if category == _PAYS:
            return f"kept over {over}"
        return f"left out: {_AGAINST.get(category, category + ' of')} {over}"
    own = f" over {over}" if judged.own else ""
    return f"pays{own or ' alone'}" if category == _PAYS else f"{category}{own}"


def _figure(judged: Judgement, final: Speedup) -> str:
    """The final figure, preceded by the one at the time where the two decide otherwise."""
    if _decision(judged, final) == _decision(judged, judged.then):
        return final.text()
    return f"decided on {judged.then.text()} at the time; with every process in, {final.text()}"


def judgement_text(judged: Judgement, final: Speedup) -> str:
    """A decision in words with the `final` figure, and the one at the time where the final
    one would have decided otherwise ("pays alone: decided on 2.41x [1.42–4.09] at the time;
    with every process in, 2.11x [0.77–5.79] (n.s.), within noise")."""
    if judged.kind == DRIFT:  # the drift decided: the figure is what it is
        return f"{judged.lead} ({final.text()} over {judged.over.rung.name}){judged.tail}"
    if _decision(judged, final) == _decision(judged, judged.then):
        return f"{_words(judged, final)}: {final.text()}{judged.tail}"
    category = _category(final, judged.threshold)
    plain = "a gain under the keep threshold" if category == _SMALL else category
    figure = f"{_figure(judged, final)}, {_PLAIN.get(category, plain)}"
    return f"{_words(judged, judged.then)}: {figure}{judged.tail}"


def _close(gain: Speedup, threshold: float = 0.0) -> bool:
    """A decision more processes could settle that matters: whether a gain of CLOSE (or the
    keep threshold) or more clears the threshold. A ratio below that would at best be shown a
    gain too small to keep, and the search takes none (on the H200, racing those cost
    seed-cnn's search a third of its time)."""
    undecided = gain.low <= 1.0 + threshold <= gain.high
    return not gain.no_interval and undecided and gain.ratio >= 1 + max(CLOSE, threshold)


def _processes_text(n: int) -> str:
    return "1 process" if n == 1 else f"{n} processes"


def failure_text(result: Result) -> str:
    """A variant that did not run, in the words of the search: a finding, not a crash."""
    if result.status == "error":
        return f"does not apply to this model: {result.error}"
    if result.status == "oom":
        return f"out of memory: {result.error}"
    if result.status == "unsupported":
        return f"does not apply here: {result.error}"  # the device's, or the model's own
    return f"{result.status}: {result.error}"


_BOUND_WORDS = {"host": "the host", "kernels": "its kernels"}  # decode_bound's, in a sentence
# A step's verdict (analysis/verdict) in the words of `Lever.relieves`
_VERDICT_BOUND = {
    "launch-bound": "host",
    "compute-bound": "compute",
    "memory-bound": "memory bandwidth",
}


class Search:
    """One search for one workload on one device; `run()` returns what it measured."""

    def __init__(
        self,
        base: RunSpec,
        device: Device,
        workload: Workload,
        groups: Sequence[str],
        tolerance: Tolerance,
        measure: Callable[[Rung, float, float | None], Result],
        check: Callable[[RunSpec], str | None],
        budget: Budget,
        timeout: float = 900.0,
        on_start: Callable[[str], None] = lambda name: None,
        more: Callable[[Rung, Result, float], Result] | None = None,
        threshold: float = 0.0,
    ) -> None:
        self.base, self.device, self.workload = base, device, workload
        self.groups, self.tolerance = tuple(groups), tolerance
        self.measure, self.check, self.budget = measure, check, budget
        self.timeout, self.on_start = timeout, on_start
        self.more = more  # one more process of a variant, merged with its earlier ones
        # a lever is kept only where its gain's interval lies above 1 + this
        self.threshold = threshold
        self.reference: Trial | None = None  # fp32 eager once measured: its spread is lent
        # Seconds of the budget no trial may take but those they are held for, and what for
        self.held, self.held_for = 0.0, ""
        # the part of `held` kept for the costly set-ups, which a race may never take
        self.held_setup = 0.0
        self.setups_tried: set[str] = set()  # the costly set-up levers already tried
        self.out = SearchOutcome()

    # --- the phases ------------------------------------------------------------------------
    def run(self) -> SearchOutcome:
        base = self._try(Rung(BASELINE, self.base), "baseline", "every speedup is against it")
        if base is not None and base.measured:
            # its processes' spread is every single-process variant's interval (`_gain`)
            while self._processes(base) < BASELINE_PROCESSES and self._extend(base):
                pass
            self.reference = base
            self._hold(base)
            stack = self._greedy(self._setups_first(base))
            self._late(base)
            stack = self._setup(stack)
            stack = self._refine(stack)
            self._confirm(self._winner())
            self._offer(stack)
        self._unreached(base)
        self.out.wall_s = self.budget.used()
        return self.out

    def _unreached(self, base: Trial | None) -> None:
        """Each group asked for that applies here but was neither tried nor skipped, with the
        reason (a group the lever says is left out here is the plan's `levers_not_tried`)."""
        reached = {t.rung.group for t in self.out.trials} | self.out.skipped_groups
        for lever in self._levers():
            for group in lever.ladder_groups:
                if group not in self.groups or group in reached:
                    continue
                if lever.not_tried(group, self.base, self.device, self.workload):
                    continue
                if base is None or not base.measured:
                    why = "fp32 eager, the baseline, did not run: nothing to measure it against"
                elif self.budget.left() <= 0:
                    why = "budget: the search's time was used up"
                elif not lever.offered and group not in self._groups_on(self.base):
                    why = "tried only on a stack that has the lever it refines, and none had it"
                else:
                    why = "no variant of it applies to this configuration"
                self.out.skip(group, why)

    def _groups_on(self, spec: RunSpec) -> set[str]:
        """The groups with a variant on `spec` itself (not only on a stack that has a lever)."""
        levers = self._levers()
        return {
            v.group for lever in levers for v in lever.variants(spec, self.device, self.workload)
        }

    def _variants(self, lever: Lever, spec: RunSpec) -> list[Variant]:
        """`lever`'s variants on `spec` of the groups asked for."""
        found = lever.variants(spec, self.device, self.workload)
        return [v for v in found if v.group in self.groups]

    # --- the greedy stack, in the order the baseline's verdict sets -----------------------
    def _greedy(self, base: Trial) -> Trial:
        """Each stackable lever once, on the best stack so far, in the verdict's order: its
        variants measured on the stack, the fastest of those kept (or a preferred one within
        noise of it) becomes the stack."""
        stack = base
        for lever in self._ordered(base):
            kept = []
            for v in self._variants(lever, stack.result.spec):
                why = f"{lever.title}, on the best stack so far"
                rung = Rung(stack_name(v.spec, self.base), v.spec, v.group)
                trial = self._try_spec(rung, STACK, why, stack, v.cost, v.costly)
                if trial is not None and trial.phase == STACK and self._keep(trial, stack):
                    kept.append(trial)  # decided now, on the figures at the time
            if kept:
                stack = self._choose(lever, kept, stack)
        return stack

    def _ordered(self, base: Trial) -> list[Lever]:
        """The stackable levers, those that relieve what bounds the baseline's step first
        (precision where it is compute-bound, a CUDA graph where it is launch-bound), then a
        setting of the host (the thread count), then the rest; the path says which and why."""
        bound, words = self._bound(base)
        levers = self._stackable(setup=False)
        # a setting of the host (the thread count) first: every later figure is taken on it
        levers.sort(key=lambda lever: not lever.kept_by_eager)
        first = [lever for lever in levers if bound and bound in lever.relieves]
        if first and words:
            titles = ", ".join(lever.title for lever in first if self._variants(lever, self.base))
            if titles:
                self.out.steps.append(f"{words}: {titles} first")
        return first + [lever for lever in levers if lever not in first]

    def _bound(self, base: Trial) -> tuple[str, str]:
        """What bounds the baseline's step, in `Lever.relieves`' words, and a sentence: a
        generation's decode step from its floors, any other step from its verdict."""
        generation = base.result.facts.get(Generation)
        if generation is not None:
            bound = decode_bound(generation)
            return bound, (
                f"the baseline's decode step is bound by {_BOUND_WORDS.get(bound, bound)} (its "
                f"larger floor is {generation.decode_floor_share:.0%} of the step)"
                if bound
                else ""
            )
        verdict = base.result.facts.get(Bottleneck)
        kind = verdict.kind if verdict is not None else ""
        bound = _VERDICT_BOUND.get(kind, "")
        return bound, f"the baseline's step is {kind}" if bound else ""

    def _choose(self, lever: Lever, kept: list[Trial], stack: Trial) -> Trial:
        """Of `lever`'s variants kept on `stack`, the one the lever prefers (bf16 in training),
        else the fastest; the path says which and why."""
        best = max(kept, key=lambda t: self._gain(t, stack).ratio)  # type: ignore[union-attr]
        for trial in kept:
            reason = lever.preferred(trial.result.spec)
            versus = self._gain(best, trial)
            if trial is best or not reason or versus is None:
                continue
            noise = "within noise of it" if versus.low <= 1.0 else "faster here"
            self.out.steps.append(
                f"{trial.rung.name} goes on rather than {best.rung.name}, {noise} "
                f"({versus.text()}): {reason}"
            )
            return trial
        if len(kept) > 1:
            self.out.steps.append(f"{best.rung.name} goes on: the fastest of {lever.title}'s")
        return best

    def _setups(self, spec: RunSpec) -> list[tuple[Lever, Variant]]:
        """The costly set-up levers (`Lever.setup_cost`), each with the one variant tried on
        `spec`."""
        found = []
        for lever in self._stackable(setup=True):
            variants = self._variants(lever, spec)
            if variants:
                found.append((lever, variants[0]))
        return found

    def _hold(self, base: Trial) -> None:
        """Hold the budget the costly set-up levers need, so that they are always reached:
        SETUP_COST times fp32 eager's process each, at most RESERVE_MOST of the budget."""
        setups = self._setups(self.base)
        setup_want = SETUP_COST * len(setups) * self._per_process(base)
        want = setup_want + CONFIRM_COST * self._per_process(base)
        self.held = min(want, RESERVE_MOST * self.budget.seconds, max(0.0, self.budget.left()))
        # a capped hold is shared in proportion; the set-ups' part is never lent to a race
        self.held_setup = self.held * setup_want / want if want > 0 else 0.0
        first = {lever.name for lever, _ in self._first_setups(base)}
        titles = " and ".join(lever.title for lever, _ in setups)
        every = {lever.name for lever, _ in setups}
        when = "first" if first == every else "first or last" if first else "last"
        self.held_for = f"{titles}, tried {when}, and " if titles else ""
        self.held_for += "confirming the recommendation"
        where = "on fp32 eager" if when == "first" else "on the best stack"
        costly = f" ({titles}: a costly set-up, tried once {where})" if titles else ""
        self.out.steps.append(f"{self.held:.0f} s of the budget held for {self.held_for}{costly}")

    def _setups_first(self, base: Trial) -> Trial:
        """The costly set-ups that relieve what bounds the baseline's step (a static KV cache
        where the host bounds decode), on it, before the greedy stack: the other levers are
        then judged where they can pay (bf16 halves a decode step's bytes, which matters only
        once the host no longer bounds it). The others stay last."""
        setups, first = self._setups(base.result.spec), self._first_setups(base)
        if not first:
            return base
        titles = ", ".join(lever.title for lever, _ in first)
        self.out.steps.append(f"{self._bound(base)[1]}: {titles} first, costly as it is")
        stack = base
        for lever, v in first:
            share = self.held_setup / len(setups)  # its part of the hold is spent now
            self.held, self.held_setup = self.held - share, self.held_setup - share
            why = f"{lever.title}, first: it relieves what bounds the baseline's step"
            stack = self._try_setup(lever, v, stack, why)
        self._hold_for_confirming(stack, self.held_setup)
        return stack

    def _first_setups(self, base: Trial) -> list[tuple[Lever, Variant]]:
        """The costly set-ups that relieve what bounds the baseline's step."""
        bound = self._bound(base)[0]
        setups = self._setups(base.result.spec)
        return [(lever, v) for lever, v in setups if bound and bound in lever.relieves]

    def _try_setup(self, lever: Lever, v: Variant, stack: Trial, why: str) -> Trial:
        """One costly set-up lever's variant on `stack`; the stack it leaves."""
        self.setups_tried.add(lever.name)
        rung = Rung(stack_name(v.spec, self.base), v.spec, v.group)
        trial = self._try_spec(rung, STACK, why, stack, v.cost, v.costly)
        if trial is not None and trial.phase == STACK and self._keep(trial, stack):
            return trial
        return stack

    def _setup(self, stack: Trial) -> Trial:
        """The costly set-up levers not tried yet, once each, on the best stack, with the
        budget held."""
        self.held = self.held_setup = 0.0
        for lever, v in self._setups(stack.result.spec):
            if lever.name not in self.setups_tried:
                why = f"{lever.title}, last: its set-up is costly, so once, on the best stack"
                stack = self._try_setup(lever, v, stack, why)
        self._hold_for_confirming(stack)
        return stack

    def _hold_for_confirming(self, stack: Trial, setups: float = 0.0) -> None:
        """Hold the confirmation's processes, as long as `stack`'s (and `setups` seconds for
        the costly set-ups still to come)."""
        more = (CONFIRM_PROCESSES - 1) * self._per_process(stack)
        self.held = min(more + setups, max(0.0, self.budget.left()))
        self.held_setup = min(setups, self.held)
        self.held_for = "confirming the recommendation"

    def _winner(self) -> Trial:
        """The trial the recommendation takes, as the command will judge it."""
        trials = self.out.trials
        at = {id(t): i for i, t in enumerate(trials)}
        references = [at.get(id(t.parent)) if t.parent is not None else None for t in trials]
        rungs, results = [t.rung for t in trials], [t.result for t in trials]
        verdicts = assess(rungs, results, self.tolerance, references)
        return trials[verdicts.index(recommend(verdicts, self.threshold))]

    def _confirm(self, winner: Trial) -> None:
        """The recommendation in CONFIRM_PROCESSES full processes, within the budget."""
        self.held, self.held_for = 0.0, ""
        # its compile is in the search's cache now: half its warm-up is the guess it saves
        overhead = winner.result.facts.get(Overhead)
        warm = (overhead.warmup_s or 0.0) if overhead is not None else 0.0
        expected = self._per_process(winner) - 0.5 * warm / max(1, self._processes(winner))
        while self._processes(winner) < CONFIRM_PROCESSES and self._extend(winner, expected):
            pass
        n = self._processes(winner)
        if winner is self.reference:
            return  # fp32 eager stays, measured in its processes
        short = "" if n >= CONFIRM_PROCESSES else f" (of {CONFIRM_PROCESSES}: budget)"
        gain = self._gain(winner, self.reference) if self.reference is not None else None
        figure = f": {gain.text()} over {BASELINE}" if gain is not None else ""
        processes = "1 process" if n == 1 else f"{n} processes"
        self.out.steps.append(f"{winner.rung.name} confirmed in {processes}{short}{figure}")

    def _per_process(self, trial: Trial) -> float:
        return trial.wall_s / max(1, self._processes(trial))

    def _late(self, base: Trial) -> None:
        """The variants measured alone only (a backend switch, int8 on it, pruning), each
        against fp32 eager or a reference of its own measured just before it."""
        wanted = [
            v
            for lever in self._levers()
            if lever.late
            for v in lever.variants(self.base, self.device, self.workload)
        ]
        every = wanted + [
            v for b in all_backends() for v in b.variants(self.base, self.device, self.workload)
        ]
        asked = [v for v in every if v.group in self.groups]
        # a variant's own reference runs too (int8 asked for without the backend switch)
        asked += [v for v in every if v not in asked and any(w.over == v.spec for w in asked)]
        for v in _references_first(sorted(asked, key=lambda v: v.cost)):
            self._try_variant(
                v, ALONE, "measured alone: it does not stack", self._reference(v, base)
            )

    def _reference(self, v: Variant, base: Trial) -> Trial:
        """What `v` is judged against: its own reference where it has one and that ran, else
        fp32 eager (int8 whose ONNX Runtime fp32 failed is still measured, against eager)."""
        if v.over is None:
            return base
        own = next((t for t in self.out.trials if t.rung.spec == v.over), None)
        return own if own is not None and own.measured else base

    def _refine(self, stack: Trial) -> Trial:
        """The stack's levers' alternatives not measured yet (the compile modes), each kept
        only if it beats the stack beyond the threshold."""
        in_stack = [lever for lever in self._stackable() if lever.active(stack.result.spec)]
        for lever in sorted(in_stack, key=lambda lever: lever.stage):
            alternatives = lever.alternatives(stack.result.spec, self.device, self.workload)
            for v in sorted(alternatives, key=lambda v: v.cost):
                if v.group not in self.groups or self._measured_value(lever, v.spec):
                    continue  # opt-in and not asked for; or measured on an earlier stack
                name = stack_name(v.spec, self.base)
                why = f"another {lever.title} on the finished stack"
                alternative = replace(v, name=name, late=False)
                trial = self._try_variant(alternative, ALTERNATIVE, why, stack)
                if trial is not None and self._keep(trial, stack):
                    stack = trial
        return stack

    def _measured_value(self, lever: Lever, spec: RunSpec) -> bool:
        """Whether `lever`'s value in `spec` was measured on some stack already."""
        value = lever.value(spec)
        return any(lever.value(t.rung.spec) == value and t.phase == STACK for t in self.out.trials)

    def _offer(self, best: Trial) -> None:
        for lever in (lever for lever in self._levers() if lever.offered):
            current = best
            while variants := lever.variants(current.result.spec, self.device, self.workload):
                why = f"offered on the best configuration: {lever.title}"
                offer = variants[0]
                name = (
                    f"{current.rung.name} + {offer.name}"
                    if current.phase != OFFER
                    else (f"{current.rung.name.rsplit(' + ', 1)[0]} + {offer.name}")
                )
                trial = self._try_variant(replace(offer, name=name), OFFER, why, current)
                if trial is None or not self._keep(trial, current):
                    break
                current = trial

    # --- choosing ---------------------------------------------------------------------------
    def _keep(self, trial: Trial, reference: Trial) -> bool:
        """Whether `trial` replaces `reference`; its outcome says why or why not."""
        if not trial.measured:
            return False
        # measured before and decided on against another (a precision alone, now the stack's
        # alternative): its step keeps that decision, and this one is a step of its own
        again = trial.judged is not None and trial.judged.over is not reference
        breach = self.tolerance.breach(trial.result.facts.get(Drift))
        gain = self._gain(trial, reference)
        if breach or gain is None:
            if not again:
                trial.judged = None
                trial.outcome = f"left out: outside the tolerance: {breach}" if breach else ""
            return False
        judged = Judgement(STACK, trial, reference, gain, threshold=self.threshold)
        if again:
            self.out.steps.append(judged)
        else:
            trial.judged, trial.outcome = judged, judgement_text(judged, gain)
        return gain.low > 1.0 + self.threshold

    def _usable(self, trial: Trial) -> bool:
        return trial.measured and self.tolerance.breach(trial.result.facts.get(Drift)) is None

    def _beats(self, trial: Trial, reference: Trial) -> bool:
        gain = self._gain(trial, reference)
        return self._usable(trial) and gain is not None and gain.low > 1.0 + self.threshold

    def _gain(self, trial: Trial, reference: Trial) -> Speedup | None:
        if not trial.measured or not reference.measured:
            return None
        spread = self.reference.result if self.reference is not None else None
        return speedup(trial.result, reference.result, spread_from=spread)

    # --- racing: more processes for the decisions that are close ----------------------------
    def _race(self, trial: Trial, reference: Trial) -> None:
        """While the gain of `trial` over `reference` is close (`_close`: undecided, and worth
        deciding), run one more process of whichever has fewer, up to RACE_MOST each, within
        the budget (`_race_room`); `trial.raced` says what came of it."""
        gain = self._gain(trial, reference)
        if self.more is None or gain is None or not _close(gain, self.threshold):
            return
        if GAVE_UP_BELOW in trial.result.metrics:  # its first process showed it cannot pay
            return
        before, short, tried = (self._processes(trial), self._processes(reference)), "", 0
        while (gain := self._gain(trial, reference)) is not None and _close(gain, self.threshold):
            side = reference if self._processes(reference) <= self._processes(trial) else trial
            if self._processes(side) >= RACE_MOST:
                short = f"{RACE_MOST} processes each, the most"
                break
            room, held_for = self._race_room(side)
            short = self._short_of(side, room, held_for)
            if short:
                break
            tried += 1
            if not self._extend(side, room=room):  # it fitted: the process itself failed
                short = f"{side.rung.name}'s next process ended without a figure"
                break
        trial.raced.append(self._race_note(trial, reference, before, short, tried))

    def _race_room(self, side: Trial) -> tuple[float, str]:
        """Seconds `side`'s next process may take, and what the rest is held for: its second
        and third may use the budget held for the confirmation (settling the stack is worth
        more), never the set-ups'."""
        if self._processes(side) < BASELINE_PROCESSES and self.held > self.held_setup:
            return self.budget.left() - self.held_setup, "the costly set-ups, tried last"
        return self.budget.left() - self.held, self.held_for

    def _short_of(self, side: Trial, room: float, held_for: str) -> str:
        """Why `side` gets no more processes within `room` seconds, or "" where one fits."""
        per = self._per_process(side)
        if per <= room:
            return ""
        kept = self.budget.left() - room
        held = f", beside {kept:.0f} s held for {held_for}" if kept > 0 else ""
        return f"budget: a process takes about {per:.0f} s, {max(0.0, room):.0f} s left{held}"

    def _race_note(
        self, trial: Trial, reference: Trial, before: tuple[int, int], short: str, tried: int
    ) -> str:
        """What a race did, for the path: "undecided after 1 process: measured again, 3
        processes" (and the reference's count, where it got more)."""
        first = f"undecided after {_processes_text(before[0])}"
        now = self._processes(trial), self._processes(reference)
        if not tried:
            return f"{first}: not measured again ({short})"
        if now == before:  # the one process tried failed
            return f"{first}: measured again, but {short}"
        text = f"{first}: measured again, {_processes_text(now[0])}"
        if now[1] > before[1]:
            text += f", {reference.rung.name} {_processes_text(now[1])}"
        return f"{text}; still undecided ({short})" if short else text

    @staticmethod
    def _processes(trial: Trial) -> int:
        m = trial.result.measurement
        return 0 if m is None else m.processes

    def _extend(
        self, trial: Trial, expected: float | None = None, room: float | None = None
    ) -> bool:
        """One more process of `trial`'s variant, if `room` (else the unheld budget) holds one
        (of `expected` seconds; else as long as its earlier ones); whether it added samples (a
        failed process is recorded in the result, beside the earlier ones, and ends its
        racing)."""
        per_process = self._per_process(trial) if expected is None else expected
        left = self._room() if room is None else room
        if self.more is None or per_process > left:
            return False
        self.on_start(f"{trial.rung.name}, process {self._processes(trial) + 1}")
        started = self.budget.clock()
        result = self.more(trial.rung, trial.result, min(self.timeout, left))
        trial.wall_s += self.budget.clock() - started
        grew = result.measurement is not None and self._processes(trial) < (
            result.measurement.processes
        )
        trial.result = result
        return grew

    def _levers(self) -> list[Lever]:
        # on generate, one that has not said it generates is listed as not tried instead
        every = not mode_of(self.base).decodes
        return [
            lever
            for lever in all_levers()
            if set(lever.ladder_groups) & set(self.groups) and (every or lever.generates)
        ]

    def _stackable(self, setup: bool | None = None) -> list[Lever]:
        """The levers that stack; with `setup`, only those whose `setup_cost` is as given."""
        return [
            lever
            for lever in self._levers()
            if lever.searched and not lever.late and (setup is None or lever.setup_cost == setup)
        ]

    # --- measuring --------------------------------------------------------------------------
    def _try_variant(self, v: Variant, phase: str, why: str, ref: Trial) -> Trial | None:
        rung = Rung(v.name, v.spec, v.group, v.late, offered=phase == OFFER)
        return self._try_spec(rung, phase, why, ref, v.cost, v.costly)

    def _try_spec(
        self,
        rung: Rung,
        phase: str,
        why: str,
        ref: Trial,
        cost: float = 1.0,
        costly: str = "",
    ) -> Trial | None:
        reason = self.check(rung.spec)
        if reason:
            self.out.skip(rung.name, f"cannot run here: {reason}", rung.group)
            return None
        left = self._room()
        # one process of the variant against one of `ref`'s (fp32 eager's wall holds three)
        expected = cost * self._per_process(ref)
        if cost > 1.0 and expected > left:
            cause = f" ({costly})" if costly else ""
            room = f"{max(0.0, left):.0f} s left"  # held for others, the room may be below 0
            self.out.skip(rung.name, f"budget: expected about {expected:.0f} s{cause}, {room}",
                          rung.group)  # fmt: skip
            return None
        target = self._target(rung.spec, ref) if phase in (STACK, ALTERNATIVE) else None
        trial = self._try(rung, phase, why, target)
        if trial is not None and trial is not ref and trial.parent is None:
            trial.parent = ref  # a configuration two paths reached keeps its first
        if trial is not None and trial.measured and ref.measured and trial is not ref:
            self._race(trial, ref)
        if trial is not None and phase == ALONE:
            trial.outcome = self._alone_outcome(trial, ref)
        return trial

    def _room(self) -> float:
        """Seconds left for the trial about to start: the budget's, less what is held."""
        return self.budget.left() - self.held

    def _no_room(self) -> str:
        if self.held > 0 and self.budget.left() > 0:
            return f"budget: the rest is held for {self.held_for}"
        return "budget: the search's time was used up"

    def _target(self, spec: RunSpec, ref: Trial) -> float | None:
        """The block rate `spec` must beat to be kept on `ref`, for its process to stop early
        where it cannot (StopRule.give_up_rate); None where the two time other blocks."""
        m = ref.result.measurement
        same = ("batch_size", "steps_per_block", "mode", "mode_args")
        if m is None or any(getattr(spec, f) != getattr(ref.result.spec, f) for f in same):
            return None
        return m.rate.median * (1.0 + self.threshold)

    def _try(self, rung: Rung, phase: str, why: str, target: float | None = None) -> Trial | None:
        done = next(
            (t for t in self.out.trials if t.rung.spec == rung.spec and not t.budget_cut), None
        )
        if done is not None:  # two paths reached one configuration: measured once
            return done
        left = self._room()
        least = LEAST_ROOM * self._per_process(self.reference) if self.reference else 0.0
        if left <= 0 or left < least:
            self.out.skip(rung.name, self._no_room(), rung.group)
            return None
        self.on_start(rung.name)
        timeout = min(self.timeout, left)
        started = self.budget.clock()
        result = self.measure(rung, timeout, target)
        trial = Trial(rung, result, phase, why, self.budget.clock() - started)
        if result.status == "timeout" and timeout < self.timeout:
            trial.budget_cut = True
            trial.outcome = "not finished: the search's budget ran out"
        elif not trial.measured:
            trial.outcome = failure_text(result)
        self.out.trials.append(trial)
        self.out.steps.append(trial)
        return trial

    def _alone_outcome(self, trial: Trial, ref: Trial) -> str:
        """What `trial` came to alone, on the figure now; its `judged` keeps the decision for
        the path to show with every process in."""
        if not trial.measured:
            return trial.outcome
        breach = self.tolerance.breach(trial.result.facts.get(Drift))
        gain = self._gain(trial, ref)
        own = ref is not self.reference  # judged against a reference of its own
        trial.judged = None
        if breach and not (own and gain):
            return f"outside the tolerance: {breach}"
        if gain is None:
            return ""
        lead = f"outside the tolerance: {breach}" if breach else ""
        cost = _accuracy_cost(trial, ref) if own and not breach else ""
        kind = DRIFT if breach else ALONE
        trial.judged = Judgement(kind, trial, ref, gain, own, lead, cost, self.threshold)
        return judgement_text(trial.judged, gain)


def _references_first(variants: Sequence[Variant]) -> list[Variant]:
    """`variants` in their order, each variant's own reference moved just before it."""
    out: list[Variant] = []
    for v in variants:
        out += [r for r in variants if v.over is not None and r.spec == v.over and r not in out]
        if v not in out:
            out.append(v)
    return out


def _accuracy_cost(trial: Trial, ref: Trial) -> str:
    """What `trial` costs in accuracy beside its reference: both drifts from the fp32 model."""
    mine, theirs = trial.result.facts.get(Drift), ref.result.facts.get(Drift)
    if mine is None or mine.max_rel_error is None:
        return ""
    text = f"; max rel. error {mine.max_rel_error:.2g}"
    if theirs is not None and theirs.max_rel_error is not None:
        text += f" against {ref.rung.name}'s {theirs.max_rel_error:.2g}"
    return text


def _merge(stack: RunSpec, variant: RunSpec, base: RunSpec) -> RunSpec:
    """`stack` with every lever value by which `variant` differs from `base`."""
    for lever in all_levers():
        value = lever.value(variant)
        if value != lever.value(base):
            stack = lever.assign(stack, value)
    return stack
