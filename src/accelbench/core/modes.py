"""The Mode interface and the registry that holds one object per mode (what a configuration's
step does: train, infer, generate, or a plugin's own).

A mode says what it is through traits, and does its own part through methods, so that no
caller compares a mode with a name: levers, backends, the engine and the renderers ask
`mode_of(spec)`. The built-in modes live in `accelbench.modes` (one file each) and register
themselves there; a plugin's module registers its own the same way (`register_mode`).

Nothing here imports torch: `accelbench --help` lists the registered modes as its choices.
A stored result may name a mode that is not registered in this process (a plugin's, stored
earlier): `mode_of` gives it a neutral stand-in, so it still lists, compares and exports;
`find_mode` (what `run` asks) refuses it, naming the valid choices.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import UsageError
from .mode_options import ModeOption
from .result import install_mode_lookup
from .vocab import DEFAULT_MODE

if TYPE_CHECKING:
    from .peaks import PeakFigures
    from .result import Result, RunSpec, Value
    from .stats import Measurement

__all__ = [
    "DEFAULT_MODE",
    "Mode",
    "ModeOption",
    "all_modes",
    "check_mode_args",
    "check_options_apply",
    "check_stored_args",
    "find_mode",
    "mode_names",
    "mode_of",
    "register_mode",
]

Rule = TypeVar("Rule")


class Mode:
    """One mode. Subclass it, set the name and traits, give its step, `@register_mode`."""

    name: str = ""
    help: str = ""  # one line, for `accelbench run --help`
    # Backward and optimizer step each step; the model is in train(); optimizer levers apply.
    trains: bool = False
    # A language model's token loop after a prompt: its rate is tokens/s, its phases have
    # figures of their own, each step its own sample; levers must say they work on it.
    decodes: bool = False
    # One forward per step on a fixed batch: exportable backends (ONNX Runtime, Core ML) can
    # run it, batch-1 latency applies, so does pruning and inference's own levers.
    forward_only: bool = False
    # The bottleneck verdict's probe (the step at a smaller batch, in alternation) applies.
    probes: bool = True
    # Its rate comes from the closed loop's timed its (it/s and step time mean something);
    # False for a mode that measures on its own (`measure`): the table leaves them out.
    closed_loop: bool = True
    # Its step runs on the configuration's fixed batch (`b` in the label); False for a mode
    # whose batches are formed otherwise (serve's dynamic batcher: `mb` is its limit).
    fixed_batch: bool = True
    # What the rate counts where it is not samples ("tokens/s"); shown beside the figure.
    rate_unit: str = ""
    # Its own parameters (core/mode_options): `run`'s and `optimize`'s options, the sweep's
    # axes, RunSpec.mode_args, the label's pieces, all generated from these.
    options: tuple[ModeOption, ...] = ()

    def option(self, name: str) -> ModeOption:
        """Its option called `name`; UsageError names the valid ones."""
        for option in self.options:
            if option.name == name:
                return option
        valid = ", ".join(o.name for o in self.options) or "none"
        raise UsageError(f"mode {self.name!r} has no option {name!r}; valid: {valid}")

    def ordered_args(self, spec: RunSpec) -> list[tuple[str, Value]]:
        """`spec`'s mode arguments in the order this mode declares its options; any it does
        not declare (a stored plugin's, not loaded here) after them, by name."""
        values = dict(spec.mode_args)
        declared = [(o.name, values.pop(o.name)) for o in self.options if o.name in values]
        return declared + sorted(values.items())

    def label_parts(self, spec: RunSpec) -> list[str]:
        """Its pieces of the configuration's label, from its options' values ("p128 n32")."""
        options = {option.name: option for option in self.options}
        return [
            options[name].label(value) if name in options else f"{name}={value}"
            for name, value in self.ordered_args(spec)
        ]

    def check_args(self, spec: RunSpec, workload: Any) -> None:
        """UsageError, in one line, where `workload` cannot run with `spec`'s arguments (asked
        while planning, of a workload that may be only a worker's facts)."""

    def units_per_sample(self, spec: RunSpec) -> int:
        """What one sample of the batch yields in the rate (1; a generation's new tokens)."""
        return 1

    def measure(self, prep: Any, closed_loop: Callable[[], Measurement]) -> Measurement:
        """This mode's measurement of the prepared configuration, in the worker. The default is
        the closed loop (engine/measure: time blocks of steps until the stop rule is met); a
        mode with a load of its own measures here and puts its typed facts in `prep.info`."""
        return closed_loop()

    def profile_note(self, spec: RunSpec) -> str:
        """What `explain` says of the step it profiled, where this mode's figure is not that
        step's time (closed_loop False); "" for none."""
        return ""

    def model_facts(self, workload: Any, spec: RunSpec) -> dict[str, Any] | None:
        """What the worker learns of the model for this mode's figures, by running its code
        (analysis/metrics.model_facts); None: the usual (FLOPs per sample of the step)."""
        return None

    def derive(self, result: Result, peaks: PeakFigures | None) -> Result | None:
        """`result` with this mode's own derived figures (never running the model); None: the
        usual ones (achieved FLOP/s, MFU, the verdict)."""
        return None

    def merge_processes(self, before: dict[str, Any], latest: dict[str, Any]) -> dict[str, Any]:
        """The metrics this mode owns, of a configuration's processes so far (`before`) and
        its latest one, merged into one (engine/rounds); the keys it returns replace both."""
        return {}

    def recorded(
        self, recorded: dict[str, Any], measurement: Measurement, spec: RunSpec
    ) -> dict[str, Any]:
        """What the worker keeps of its steps' records (`prep.info`), once timed: as it is."""
        return recorded

    def build_step(self, prep: Any) -> Callable[[], None]:
        """The step the PyTorch backend times, from a model made ready (levers.Prepared)."""
        raise UsageError(f"mode {self.name!r} has no PyTorch step")

    def prepare(self, prep: Any) -> None:
        """What the step needs besides the model in place (an optimizer), before `build_step`."""

    def inputs(self, spec: RunSpec, workload: Any, generator: Any) -> Any:
        """The (inputs, targets) batch on the CPU that this mode's step takes."""
        return workload.make_batch(generator, spec.batch_size)

    def sample_rule(self, rule: Rule) -> Rule:
        """The timing loop's stop rule for this mode (a StopRule), given the usual one."""
        return rule

    def drift_spec(self, spec: RunSpec) -> RunSpec | None:
        """The configuration whose outputs are compared with fp32's; None: this one."""
        return None

    def own_drift(self, prep: Any) -> dict[str, Any] | None:
        """This mode's own drift check, where outputs are not what it compares; None: none."""
        return None


_MODES: dict[str, Mode] = {}


def register_mode(cls: type[Mode]) -> type[Mode]:
    """Class decorator: register one instance of a mode. A duplicate name is an error."""
    mode = cls()
    if not mode.name:
        raise ValueError(f"{cls.__name__} has no name")
    if mode.name in _MODES:
        raise ValueError(f"a mode named {mode.name!r} is registered already")
    _check_options(mode)
    _MODES[mode.name] = mode
    return cls


def _check_options(mode: Mode) -> None:
    """Options are unique within a mode; two modes may share an option (one `run` option for
    both) only where it is the same parameter: the same name on the same option."""
    names = [option.name for option in mode.options]
    if len(set(names)) < len(names):
        raise ValueError(f"mode {mode.name!r} declares an option twice: {names}")
    for other in (o for m in _MODES.values() for o in m.options):
        for option in mode.options:
            if (option.option == other.option) != (option.name == other.name):
                raise ValueError(
                    f"mode {mode.name!r}: option {option.name!r} ({option.option}) clashes "
                    f"with {other.name!r} ({other.option}) of another mode"
                )


def all_modes() -> list[Mode]:
    return list(_MODES.values())


def mode_names() -> tuple[str, ...]:
    return tuple(_MODES)


def find_mode(name: str) -> Mode:
    """The registered mode called `name`; UsageError naming the valid ones otherwise."""
    mode = _MODES.get(name)
    if mode is None:
        raise UsageError(f"unknown mode {name!r}; valid: {', '.join(_MODES)}")
    return mode


def mode_of(spec_or_name: RunSpec | str) -> Mode:
    """The mode of a configuration (or by name); a neutral stand-in for a name not registered
    here, so that a stored result of a plugin's mode still renders."""
    name = spec_or_name if isinstance(spec_or_name, str) else spec_or_name.mode
    return _MODES.get(name) or _unregistered(name)


def check_mode_args(mode: Mode, given: Mapping[str, Value]) -> None:
    """Each named option is one `mode` declares, and each value one it takes; UsageError
    names the first that is not."""
    for name, value in given.items():
        try:
            mode.option(name).check(value)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def check_stored_args(spec: RunSpec) -> None:
    """A stored or imported spec's mode arguments: ValueError names the first that its mode
    does not declare or would not take. A plugin's mode not loaded here keeps its own."""
    if spec.mode in _MODES:
        try:
            check_mode_args(_MODES[spec.mode], dict(spec.mode_args))
        except UsageError as exc:
            raise ValueError(f"spec: {exc}") from None


def check_options_apply(
    names: Iterable[str], modes: Iterable[str], *, single: bool = False
) -> None:
    """Each mode option named is one that some mode of `modes` declares (its values would go
    unused otherwise); UsageError names the option and the modes that have it."""
    modes = set(modes)
    for name in names:
        owners = [m for m in _MODES.values() if any(o.name == name for o in m.options)]
        if not owners:
            valid = sorted({o.name for m in _MODES.values() for o in m.options})
            raise UsageError(f"no mode has an option {name!r}; valid: {', '.join(valid)}")
        if not modes & {m.name for m in owners}:
            option = owners[0].option(name)
            flag, which = (option.single, "--mode") if single else (option.option, "--modes")
            names = " or ".join(m.name for m in owners)
            raise UsageError(f"{flag} applies to {which} {names} only")


install_mode_lookup(mode_of)  # a Result's rate asks its mode what one sample counts


def _unregistered(name: str) -> Mode:
    stand_in = Mode()
    stand_in.name = name
    stand_in.probes = False
    return stand_in
