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

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import UsageError
from .vocab import DEFAULT_MODE

if TYPE_CHECKING:
    from .result import RunSpec

__all__ = [
    "DEFAULT_MODE",
    "Mode",
    "all_modes",
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
    # A language model's token loop after a prompt (RunSpec's prompt_length and new_tokens):
    # its rate is tokens/s, its phases have figures of their own, each step its own sample.
    decodes: bool = False
    # One forward per step on a fixed batch: exportable backends (ONNX Runtime, Core ML) can
    # run it, batch-1 latency applies, so does pruning and inference's own levers.
    forward_only: bool = False
    # The bottleneck verdict's probe (the step at a smaller batch, in alternation) applies.
    probes: bool = True
    # What the rate counts where it is not samples ("tokens/s"); shown beside the figure.
    rate_unit: str = ""

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
    _MODES[mode.name] = mode
    return cls


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


def _unregistered(name: str) -> Mode:
    stand_in = Mode()
    stand_in.name = name
    stand_in.probes = False
    return stand_in
