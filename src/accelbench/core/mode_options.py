"""A mode's own parameters, declared as objects: what `Mode.options` holds.

A mode option owns everything about one parameter, as a lever does: its name (the key in
`RunSpec.mode_args`, in stored JSON, `--json` and CSV), its `run` option (a comma-separated list
the sweep multiplies) and `optimize` option (one value), how a word parses and a stored value
is checked, its default when not given (read from the workload, e.g. a language model's prompt
length), and its piece of a configuration's label. `run`'s and `optimize`'s options, the sweep's
axes, the label and the stored record are generated from these objects, so a mode with a
parameter of its own is still one file.

Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .limits import count_problem

if TYPE_CHECKING:
    from .result import RunSpec, Value

__all__ = ["Count", "ModeOption"]


@dataclass(frozen=True)
class ModeOption:
    """One parameter of a mode; values are plain JSON scalars (str, int, float, bool).

    `option` is `run`'s list-valued option ("--prompt-lengths"), `single` `optimize`'s
    single-valued one ("--prompt-length"; "" for none); `help` says what it is, and the
    command's help adds which mode it applies to. `workload_attr` names the workload's
    attribute that gives the default where the user gives none ("" : `default`); a default of
    None means the mode runs without it (nothing is stored). `prefix` makes the label piece
    ("p" gives "p128"); with none the piece is "name=value"."""

    name: str
    option: str
    help: str
    single: str = ""
    metavar: str = "LIST"
    single_metavar: str = "VALUE"
    prefix: str = ""
    workload_attr: str = ""
    default: Value | None = None
    words: tuple[str, ...] = ()  # the words it takes, when they are a fixed set

    @property
    def sweep_key(self) -> str:
        """Its name in a sweep's id ("--max-batches" -> "max_batches")."""
        return self.option.lstrip("-").replace("-", "_")

    def parse(self, word: str) -> Value:
        """A word from the command line to a value; ValueError names the valid ones."""
        if word in self.words:
            return word
        raise ValueError(f"invalid value {word!r}; valid: {', '.join(self.words)}")

    def word(self, value: Value) -> str:
        """How a value reads in a label and the option: the inverse of parse."""
        return str(value)

    def check(self, value: Any) -> None:
        """A stored, imported or library-given value: ValueError unless parse could make it."""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"{self.name} has the wrong type ({type(value).__name__})")
        if self.parse(self.word(value)) != value:
            raise ValueError(f"{self.name}: {value!r} is not a value it takes")

    def default_for(self, workload: Any) -> Value | None:
        """Its value where none was asked for: the workload's, else the declared default."""
        if self.workload_attr:
            return getattr(workload, self.workload_attr, None)  # type: ignore[no-any-return,unused-ignore]
        return self.default

    def value(self, spec: RunSpec) -> Value | None:
        """Its value in a configuration (None: not set)."""
        return spec.mode_arg(self.name)

    def label(self, value: Value) -> str:
        """Its piece of a configuration's label."""
        word = self.word(value)
        return f"{self.prefix}{word}" if self.prefix else f"{self.name}={word}"


@dataclass(frozen=True)
class Count(ModeOption):
    """A whole number from `least` to core.limits' largest count (a prompt's tokens)."""

    single_metavar: str = "N"
    least: int = 1

    def parse(self, word: str) -> Value:
        try:
            number = int(word)
        except ValueError:
            raise ValueError(f"{word!r} is not a whole number") from None
        self.check(number)
        return number

    def check(self, value: Any) -> None:
        problem = count_problem(value, self.least)
        if problem:
            raise ValueError(f"{self.name} {problem}, not {value!r}")

    def of(self, spec: RunSpec) -> int:
        """Its value in `spec`, which must have it (the worker's read, after the plan set it)."""
        value = self.value(spec)
        if not isinstance(value, int):
            raise ValueError(f"{spec.mode} needs {self.name}; the configuration has none")
        return value
