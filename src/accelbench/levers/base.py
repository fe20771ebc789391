"""The Lever interface, the registry that holds one object per lever, and the state levers change.

A lever owns everything about itself: its option on the command line and the words it takes,
its value when not asked for (its default, "off"), whether a configuration can take it and why
not, how it changes the model and the step, its part of a configuration's label, the code a
user copies to use it, and the variants the optimization ladder tries. The CLI options, the
sweep's axes, `compare --by`, labels, charts, export/import and the ladder are generated from
the registry, so a new lever is one file and its `@register`.

Nothing here, and no lever module at its top, imports torch: `accelbench --help` builds its
options from the registry without paying for torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.modes import mode_of
from ..core.result import RunSpec, Value

if TYPE_CHECKING:
    import torch
    from torch import nn

    from ..devices import Device, MemoryReading, Timer
    from ..workloads import Batch, Workload

__all__ = [
    "Lever",
    "Prepared",
    "Switch",
    "Variant",
    "all_levers",
    "find_lever",
    "not_forward_only",
    "register",
]


def not_forward_only(base: RunSpec) -> str:
    """Why a lever that needs mode infer's one fixed-batch forward (another backend, int8,
    pruning) is not tried on `base`'s mode: training has no such forward; generate and serve
    run the model otherwise (a token loop; batches the batcher forms)."""
    if mode_of(base).trains:
        return "an inference lever"
    return "it needs mode infer's one fixed-batch forward"


@dataclass
class Prepared:
    """A PyTorch model made ready on a device; levers adjust it before and after the step is
    built. The torch backend builds it; the timing loop runs its `step`."""

    spec: RunSpec
    workload: Workload
    device: Device
    model: nn.Module
    batch: Batch
    optimizer: torch.optim.Optimizer | None = None
    autocast_dtype: torch.dtype | None = None
    scaler: Any = None  # a torch.amp.GradScaler for fp16 training
    step: Callable[[], None] = field(default=lambda: None)
    # Figures levers record about what they did, merged into the Result's metrics by key.
    info: dict[str, Any] = field(default_factory=dict)
    # Autocast's cast cache would hold tensors across a CUDA-graph capture; the graph lever
    # turns it off.
    autocast_cache: bool = True
    # Mode generate: a KV cache made once and reset before each generation (a static one,
    # levers/kv_cache; None: a new dynamic cache each time), and the forward the decode steps
    # call where it is not the model's own (a compiled one, levers/compile).
    kv_cache: Any = None
    decode: Callable[..., Any] | None = None

    def timer(self) -> Timer:
        return self.device.timer()

    def peak_memory(self) -> MemoryReading:
        return self.device.peak_memory()

    def outputs(self) -> torch.Tensor:
        """The model's outputs on the batch, as this configuration computes them, on the CPU."""
        import torch

        with torch.inference_mode(), self.autocast():
            out = self.workload.forward(self.model, self.batch[0])
        return out.float().cpu()

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        import torch

        return torch.autocast(
            self.device.autocast_type,
            dtype=self.autocast_dtype,
            cache_enabled=self.autocast_cache,
        )


@dataclass(frozen=True)
class Variant:
    """One configuration a lever offers the optimization ladder.

    `group` is the name `optimize --levers` selects it by (usually the lever's); a `late`
    variant is measured alone only (the inference-only levers, which do not stack). `cost` is
    its expected wall time against the configuration it is made from: above 1, the search
    first checks that its budget has room for it (max-autotune tunes for minutes). `over` is
    the configuration its own gain and accuracy cost are judged against, where that is not the
    one it is made from: int8 on ONNX Runtime against ONNX Runtime's fp32, so that int8 is not
    credited with what the backend switch gained; the search measures that one first."""

    name: str
    spec: RunSpec
    group: str
    late: bool = False
    cost: float = 1.0
    costly: str = ""  # why its cost is above 1, for the search's "not tried: budget"
    over: RunSpec | None = None


class Lever:
    """One optimization lever. Subclasses set the class attributes and override what applies.

    Values are plain JSON scalars (str, int, float, bool), so they store and export as they
    are; the default means "not used" and is never stored in a RunSpec.
    """

    name = ""  # key in RunSpec.levers, in exported files and in the store's JSON
    title = ""  # how a sentence names it ("torch.compile"); the name when empty
    option = ""  # the `run` option, e.g. "--memory-formats" ("" only for an offered lever)
    # explain's option, which takes one value: set where `option` is a plural naming a list
    single_option = ""  # e.g. "--memory-format"; `option` itself when empty
    metavar = "LIST"
    help = ""
    group_title = "configurations (lists multiply)"  # the --help section it appears in
    dimension = ""  # `compare --by` name; "" for none
    default: Value = ""
    words: tuple[str, ...] = ()  # the words the option takes, when they are a fixed set
    stage = 100  # application order: lower first (pruning before the layout before compile)
    torch_only = True  # a PyTorch option another backend (ONNX Runtime) cannot take
    # The optimization search (workflows/search): a searched lever's variants are measured
    # alone, then the paying ones stacked; a late one is measured alone only (it does not
    # stack); an offered one is tried on the best stack at the end and never recommended
    # without saying so (a larger batch changes what is optimized).
    searched = False
    late = False
    offered = False
    # Groups the search tries only when `optimize --levers` names them: those that cost minutes
    # (max-autotune's kernel search) or change what is optimized (a larger batch).
    opt_in: tuple[str, ...] = ()
    # Whether the lever is known to work on mode "generate" (a language model decoding token
    # by token, its KV cache growing): a lever that has not said so is refused there by `run`,
    # and left out of the search (listed as not tried).
    generates = False
    # What bounds a step this lever's variants relieve, in analysis/verdict.decode_bound's
    # words ("host", "memory bandwidth", "compute"): the search tries them first where the
    # baseline is bound by one of them.
    relieves: tuple[str, ...] = ()
    # A set-up that costs far more than the step (torch.compile's minutes, a static KV cache
    # with its compiled decode step): the search tries it once, last, on the best stack, with
    # budget held for it from the start so that it is always reached.
    setup_cost = False
    # A setting of the host rather than an optimization of the model (the thread count): the
    # plain configuration an optimized one is measured against keeps it (`registry.eager`).
    kept_by_eager = False

    def __init__(self) -> None:
        self.title = self.title or self.name

    # --- values ---------------------------------------------------------------------------
    def parse(self, word: str) -> Value:
        """A word from the command line to a value; ValueError names the valid ones."""
        if word in self.words:
            return self.from_word(word)
        raise ValueError(f"invalid value {word!r}; valid: {', '.join(self.words)}")

    def from_word(self, word: str) -> Value:
        return word

    def word(self, value: Value) -> str:
        """How a value reads in `compare --by` and in the option: the inverse of parse."""
        return str(value)

    def baseline_word(self) -> str:
        """The value `compare --by` measures the others against: the default's word."""
        return self.word(self.default)

    def check(self, value: Any) -> None:
        """A stored or imported value: ValueError unless it is one this lever could have set."""
        if isinstance(value, bool) is not isinstance(self.default, bool) or not isinstance(
            value, type(self.default)
        ):
            raise ValueError(f"{self.name} has the wrong type ({type(value).__name__})")
        self.parse(self.word(value))

    def value(self, spec: RunSpec) -> Value:
        return spec.lever(self.name, self.default)

    def active(self, spec: RunSpec) -> bool:
        """Whether `spec` asks for this lever: only active levers are checked and applied."""
        return self.value(spec) != self.default

    def assign(self, spec: RunSpec, value: Value) -> RunSpec:
        return spec.with_lever(self.name, value, self.default)

    def sweep_values(self, values: tuple[Value, ...], nodes: int = 1) -> tuple[Value, ...]:
        """The values a sweep runs when these were asked for on each of `nodes` nodes (data
        parallelism counts processes over all nodes, and adds 1)."""
        return values

    # --- what it does ---------------------------------------------------------------------
    def label(self, value: Value) -> str:
        """Its part of a configuration's label; "" at the default."""
        return "" if value == self.default else f"{self.name}={self.word(value)}"

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        """Why this configuration cannot take the lever's value, or None (asked of active
        levers only, as are the methods below). The command asks it while planning, of a
        workload that may be only a worker's facts: it reads those, never builds the model."""
        return None

    def refused_by_model(self, spec: RunSpec, workload: Workload) -> str | None:
        """Why the model itself cannot take this lever, where only running it can tell (a
        forward that `.view()`s a channels_last tensor, a model with nothing to prune); called
        in the worker, before anything is built, only when the lever is active (never while
        planning: that is `unsupported`, which may not build the model). None: it can, or
        cannot be told."""
        return None

    def apply_model(self, prep: Prepared, value: Value) -> None:
        """Change the model (and batch) before the optimizer and step function exist."""

    def apply_step(self, prep: Prepared, value: Value) -> None:
        """Change the built step function."""

    def warmup(self, spec: RunSpec) -> int:
        """The warm-up its this lever's value needs before timing, at least (0: as asked)."""
        return 0

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        """The lines a user copies to set this lever as `spec` has it in their own code."""
        return []

    def no_gain_reason(self, spec: RunSpec, launch_bound: bool) -> str:
        """Why this lever, as `spec` sets it, is known not to pay, or "" (for the ladder's
        note on a variant that did not pay)."""
        return ""

    # --- the optimization ladder ----------------------------------------------------------
    @property
    def ladder_groups(self) -> tuple[str, ...]:
        """The names `optimize --levers` takes for this lever's variants."""
        return (self.name,) if self.searched or self.late or self.offered else ()

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        """The configurations the search measures with this lever alone on `base` (for an
        offered lever: on the best stack)."""
        return []

    def alternatives(self, spec: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        """Other values of this lever worth trying on a stack `spec` that has it already (the
        costly ones, such as compile modes, measured only where the lever paid)."""
        return []

    def pays_with(self, stack: RunSpec) -> str:
        """Why this lever is worth trying on `stack` although it did not pay alone ("channels_last
        pays with a low precision"), or "" when it is not."""
        return ""

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        """Why the ladder leaves `group` out for this configuration; "" when it does not."""
        return ""

    def preferred(self, spec: RunSpec) -> str:
        """Why the search takes this lever's value in `spec`, where it paid on the stack, over
        a faster variant of the same lever ("bf16 needs no GradScaler"), or "" (the fastest)."""
        return ""


class Switch(Lever):
    """A lever that is on or off, named by two words (off first); its label is its name."""

    default = False
    off_word, on_word = "off", "on"

    def __init__(self) -> None:
        super().__init__()
        self.words = (self.off_word, self.on_word)

    def from_word(self, word: str) -> Value:
        return word == self.on_word

    def word(self, value: Value) -> str:
        return self.on_word if value else self.off_word

    def label(self, value: Value) -> str:
        return self.name if value else ""


_LEVERS: dict[str, Lever] = {}


def register(cls: type[Lever]) -> type[Lever]:
    """Class decorator: add one instance of the lever to the registry (names are unique)."""
    lever = cls()
    if not lever.name or lever.name in _LEVERS:
        raise ValueError(f"lever {lever.name!r} is registered twice or has no name")
    # A search-only lever over a field of RunSpec (the batch) has no option of its own.
    taken = lever.option in (o.option for o in _LEVERS.values())
    if (lever.option or not lever.offered) and (not lever.option.startswith("--") or taken):
        raise ValueError(f"lever {lever.name!r} needs an option of its own, not {lever.option!r}")
    _LEVERS[lever.name] = lever
    return cls


def all_levers() -> Iterator[Lever]:
    """Every registered lever, in registration order (the order of sweeps and options)."""
    return iter(list(_LEVERS.values()))


def find_lever(name: str) -> Lever:
    """The lever called `name`; KeyError names the registered ones."""
    try:
        return _LEVERS[name]
    except KeyError:
        raise KeyError(f"unknown lever {name!r}; registered: {', '.join(_LEVERS)}") from None
