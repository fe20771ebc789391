"""The options several commands share: value types (counts, seconds, percentages, lists),
--json, --db, --quiet, the result filters and --model.

Only argparse and modules free of torch and numpy load here, so building the parser (and
`--help`) stays instant; what a value means is checked by the library when the command runs.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

from ..core.limits import MOST_COUNT as MOST
from ..core.limits import seconds_problem
from ..core.modes import all_modes, mode_names
from ..core.vocab import PRECISIONS, STATUSES
from ..errors import UsageError
from .parser import did_you_mean

__all__ = [
    "Commands",
    "ListOf",
    "OneOf",
    "add_db",
    "add_filters",
    "add_json",
    "add_model_options",
    "add_output_options",
    "add_quiet",
    "count",
    "filters",
    "fraction",
    "from_args",
    "model_arg",
    "model_options",
    "points",
    "positive",
    "result_id",
    "seconds",
    "share",
    "workload_ref",
]

# What `accelbench` hands each command module to add its subparser to.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

T = TypeVar("T")
DB_HELP = (
    "results store: an SQLite file, or a PostgreSQL server as postgresql://USER@HOST:PORT/NAME "
    "(the password from PGPASSWORD or ~/.pgpass, or in the URL) (default: $ACCELBENCH_DB or "
    "./accelbench.db)"
)


def count(minimum: int) -> Callable[[str], int]:
    """A whole number from `minimum` up to MOST."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        if value > MOST:
            raise argparse.ArgumentTypeError(f"must be at most {MOST:,}, got {value:,}")
        return value

    return parse


def _float(text: str, what: str, number: str | None = None) -> float:
    """`number` (all of `text` when not given) as a float, or argparse's one-line complaint
    that `text` is not `what`."""
    try:
        return float(text if number is None else number)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def seconds(text: str) -> float:
    """A duration: finite, above 0, at most a week (`inf` would never end a loop)."""
    value = _float(text, "a number of seconds")
    problem = seconds_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(f"{problem}, got {text}")
    return value


def idle_seconds(text: str) -> float:
    """A wait in seconds: 0 (none) or more."""
    value = _float(text, "a number of seconds")
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value


def _percentage(text: str) -> float:
    """'5%' or '0.05' -> 0.05."""
    if text.endswith("%"):
        return _float(text, "a percentage like 5%", text[:-1]) / 100
    return _float(text, "a percentage like 5%")


def fraction(text: str) -> float:
    """A share strictly between none and all, e.g. a threshold of 5%."""
    value = _percentage(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(_out_of_range(text, value, "between 0% and 100%"))
    return value


def share(text: str) -> float:
    """Like fraction, but 0 and 1 (all must agree) are allowed."""
    value = _percentage(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(_out_of_range(text, value, "from 0% to 100%"))
    return value


def _out_of_range(text: str, value: float, allowed: str) -> str:
    """Say which was meant when a bare number above 1 reads as a percentage ('5' for 5%)."""
    if not text.endswith("%") and 1 < value <= 100:
        return (
            f"must be {allowed}: a bare {text} is {value:.0%}; write {text}% for {text} percent, "
            f"or {value / 100:g}"
        )
    return f"must be {allowed}, got {text}"


def points(text: str) -> float:
    """'2', '2%' or '0.5' -> percentage points of accuracy."""
    value = _float(text, "a number of percentage points like 2", text.removesuffix("%"))
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100 points, got {text}")
    return value


def positive(text: str) -> float:
    value = _float(text, "a number")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def result_id(text: str) -> int | None:
    """A result's id ('12') as a number; None for anything else, a sweep id included (12 hex
    digits, which may all be digits). ASCII digits only: str.isdigit takes '²', int() not."""
    if text.isascii() and text.isdigit() and len(text) < 12:
        return int(text)
    return None


class OneOf:
    """One of `valid` (a dict maps each word to its value). It keeps `valid` itself, so a test
    can check that the CLI offers the library's own vocabulary rather than a copy."""

    def __init__(self, valid: Sequence[str] | Mapping[str, Any]) -> None:
        self.valid = valid

    def __call__(self, text: str) -> Any:
        if text not in self.valid:
            close = did_you_mean(text, self.valid)
            raise argparse.ArgumentTypeError(
                f"invalid value {text!r}{close}; valid: {', '.join(self.valid)}"
            )
        return self.valid[text] if isinstance(self.valid, Mapping) else text


def registered_modes() -> tuple[str, ...]:
    """The modes to offer, plugins' included: they load with the lever registry."""
    from .. import levers  # noqa: F401

    return mode_names()


def modes_help(default: str) -> str:
    """What each registered mode measures, for an option that offers them."""
    registered_modes()
    described = "; ".join(f"{mode.name}: {mode.help}" for mode in all_modes())
    return f"{described} (default: {default})"


class ListOf:
    """A comma-separated list, each item parsed by `item`, duplicates dropped."""

    def __init__(self, item: Callable[[str], Any]) -> None:
        self.item = item

    def __call__(self, text: str) -> tuple[Any, ...]:
        items = [part.strip() for part in text.split(",") if part.strip()]
        if not items:
            raise argparse.ArgumentTypeError("empty list")
        return tuple(dict.fromkeys(self.item(part) for part in items))


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def _db_file(text: str) -> str:
    # An empty path must not fall back to ./accelbench.db, as if --db had not been given
    if not text:
        raise argparse.ArgumentTypeError("an empty path; name the database file, e.g. --db r.db")
    return text


def add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", type=_db_file, metavar="PATH|URL", help=DB_HELP)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_output_options(parser: argparse.ArgumentParser, progress: bool) -> None:
    """--json and --db, which every command that measures or lists results takes, and --quiet
    where it shows `progress`."""
    if progress:
        add_quiet(parser)
    add_json(parser)
    add_db(parser)


def from_args(kind: Callable[..., T], args: argparse.Namespace, **given: Any) -> T:
    """A `kind` dataclass (a typed request) from the options named as its fields; `given` sets
    the fields that no single option holds, and a field with neither keeps its default."""
    # typeshed knows a dataclass only by a private protocol, which a type variable cannot bound
    named = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(kind)  # type: ignore[arg-type]
        if f.name not in given and hasattr(args, f.name)
    }
    return kind(**named, **given)


def add_filters(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("filters (each narrows the selection)")
    group.add_argument("--workload", help="only this workload")
    group.add_argument("--device", help="only this device name, e.g. cuda:0")
    group.add_argument("--host", help="only results measured on this host")
    # any name: a stored result's mode may be a plugin's that is not loaded now
    group.add_argument("--mode", help="only this mode")
    group.add_argument("--precision", choices=PRECISIONS, help="only this precision")
    group.add_argument("--backend", help="only this backend, e.g. torch or onnxruntime-cpu")
    group.add_argument("--sweep", help="only this sweep id")
    group.add_argument(
        "--status",
        type=OneOf(STATUSES),
        metavar="STATUS",
        help=f"only this status ({', '.join(STATUSES)})",
    )


def filters(args: argparse.Namespace) -> Any:
    """The store's Filters from the filter options (store.db loads only when a command runs)."""
    from ..store.db import Filters

    return from_args(Filters, args)


def add_model_options(model: Any) -> None:
    """--model and what a bare nn.Module needs, for commands that take one."""
    model.add_argument(
        "--model",
        metavar="REF",
        help="FILE.py:factory or package.module:factory returning a Workload or an nn.Module",
    )
    model.add_argument(
        "--model-arg",
        action="append",
        type=model_arg,
        dest="model_args",
        metavar="NAME=VALUE",
        help="a keyword argument for the factory, e.g. depth=18 (repeat for more; the value a "
        "Python literal, else text); stored in the model's name, so each set is its own result",
    )
    model.add_argument(
        "--input-shape",
        metavar="SHAPE",
        help="per-sample input shape for an nn.Module, e.g. 3x224x224 or 128; for a forward "
        "that takes several tensors one per input, in order (3x224x224,4) or by name "
        "(image=3x224x224,meta=4)",
    )
    model.add_argument(
        "--num-classes",
        type=count(1),
        metavar="N",
        help="classes of an nn.Module classifier (cross-entropy loss)",
    )
    model.add_argument(
        "--vocab-size", type=count(1), metavar="N", help="make inputs integer token ids in [0, N)"
    )
    model.add_argument(
        "--loss",
        choices=("cross-entropy", "mse"),
        default="cross-entropy",
        help="loss for an nn.Module (default: cross-entropy)",
    )


def model_arg(text: str) -> tuple[str, str]:
    """'depth=18' -> ('depth', '18'): a keyword argument of the factory, its value as written
    (workloads.custom reads it as a Python literal, else as text)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=VALUE; write e.g. depth=18 or model_name=resnet18"
        )
    return name.strip(), value


def model_options(args: argparse.Namespace) -> object:
    """How to call the --model's factory and feed its nn.Module (workloads.custom loads only
    when a command runs)."""
    from ..workloads.custom import ModelOptions, parse_input_shapes

    one, several, names = parse_input_shapes(args.input_shape) if args.input_shape else ((), (), ())
    return ModelOptions(
        input_shape=one or None,
        input_shapes=several,
        input_names=names,
        num_classes=args.num_classes,
        vocab_size=args.vocab_size,
        loss=args.loss,
        factory_args=tuple(args.model_args or ()),
    )


def workload_ref(args: argparse.Namespace) -> Any:
    """The one workload a command names: a registered name, or --model with its options."""
    from ..workloads import WorkloadRef

    if bool(args.workload) == bool(args.model):
        raise UsageError("name one workload, or give --model FILE.py:factory (not both)")
    if args.model_args and not args.model:
        raise UsageError("--model-arg gives your --model's factory its arguments: add --model")
    if args.model:
        return WorkloadRef(args.model, model_options(args))
    return WorkloadRef(args.workload)
