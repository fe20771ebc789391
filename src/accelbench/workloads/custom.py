"""Your own model: `--model path/to/file.py:factory` or `--model package.module:factory`.

The factory, called with the arguments given (`--model-arg NAME=VALUE`), returns either a
Workload (used as it is), a transformers causal language model (a PreTrainedModel whose
can_generate() is true: it runs every mode, "generate" included, with no other option), or an
nn.Module, which accelbench wraps from `ModelOptions`: the input shape per sample, or one per
input for a forward that takes several (floats, or integer tokens when a vocabulary size is
given), and a classification head size or a regression loss.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..core.limits import MOST_COUNT
from ..errors import WorkloadError
from .base import Batch, Workload
from .inputs import Inputs, call_model
from .llm import LanguageModel, is_causal_lm
from .outputs import accepts_labels, output_tensor, own_loss

__all__ = [
    "ModelOptions",
    "factory_label",
    "load_custom",
    "parse_input_shapes",
    "parse_shape",
]

LOSSES = ("cross-entropy", "mse")
Shape = tuple[int, ...]  # one input's, per sample
# Where a model that the options cannot feed is shown its way: a Workload of its own.
WORKLOAD_DOCS = "docs/extending.md#your-own-model"
SHAPES_HINT = "one shape per input: --input-shape 3x224x224,4 or image=3x224x224,meta=4"


@dataclass(frozen=True)
class ModelOptions:
    """How to call the factory, and how to feed and train the bare nn.Module it returns
    (`--input-shape`, `--num-classes`, `--vocab-size`, `--loss`, `--model-arg` on the command
    line): `ModelOptions(input_shape=(3, 32, 32), num_classes=10)` feeds random float images of
    3x32x32 and trains against 10 random classes.

    input_shape: one sample's shape, without the batch (required for an nn.Module).
    input_shapes: a forward that takes several tensors: one shape per input, given to it in
        order (`forward(image, meta)`) or, with `input_names`, by name.
    num_classes: the classifier's outputs; its loss is cross-entropy against random labels.
    vocab_size: when set, the first input is integer tokens in [0, vocab_size), not floats.
    loss: "cross-entropy" (needs num_classes) or "mse" (against zeros of the output's shape).
    batch_size: the batch when the request does not give one.
    factory_args: the keyword arguments the factory is called with, each value as written
        (`("depth", "18")`): a Python literal where it parses as one, else the text itself.
    """

    input_shape: tuple[int, ...] | None = None
    num_classes: int | None = None
    vocab_size: int | None = None  # when set, the first input is integer tokens in [0, vocab_size)
    loss: str = "cross-entropy"
    batch_size: int = 32
    input_shapes: tuple[tuple[int, ...], ...] = ()
    input_names: tuple[str, ...] = ()
    factory_args: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        names = [name for name, _ in self.factory_args]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise WorkloadError(f"--model-arg {twice[0]} given twice; give each argument once")

    def shapes(self) -> tuple[tuple[int, ...], ...]:
        """Every input's shape per sample, in order (none when no shape was given)."""
        if self.input_shapes:
            return self.input_shapes
        return (self.input_shape,) if self.input_shape is not None else ()


def parse_shape(text: str) -> tuple[int, ...]:
    """'3x224x224' -> (3, 224, 224)."""
    try:
        shape = tuple(int(part) for part in text.lower().split("x"))
    except ValueError:
        shape = ()
    if not shape or any(not 1 <= n <= MOST_COUNT for n in shape):
        raise WorkloadError(
            f"bad --input-shape {text!r}; write it like 3x224x224 or 128, each size from 1 to "
            f"{MOST_COUNT:,}"
        )
    return shape


def parse_input_shapes(text: str) -> tuple[Shape, tuple[Shape, ...], tuple[str, ...]]:
    """'3x224x224' -> the one input's shape; '3x32x32,4' -> a shape per positional input;
    'image=3x32x32,meta=4' -> a shape per named input. Returned as (one shape or (), several
    shapes or (), their names or ())."""
    parts = [part.strip() for part in text.split(",")]
    named = ["=" in part for part in parts]
    if any(named) and not all(named):
        raise WorkloadError(f"bad --input-shape {text!r}: name every input or none ({SHAPES_HINT})")
    names = tuple(part.partition("=")[0].strip() for part in parts) if all(named) else ()
    bad = [name for name in names if not name.isidentifier()]
    if bad or len(set(names)) < len(names):
        problem = f"{bad[0]!r} is not an argument name" if bad else "a name given twice"
        raise WorkloadError(f"bad --input-shape {text!r}: {problem} ({SHAPES_HINT})")
    shapes = tuple(parse_shape(part.rpartition("=")[2].strip()) for part in parts)
    if len(shapes) == 1 and not names:
        return shapes[0], (), ()
    return (), shapes, names


def _factory_value(text: str) -> Any:
    """A --model-arg's value: the Python literal it spells (18, 0.5, True, None, [1, 2],
    'x'), else the text itself (resnet18), as a shell user would mean it."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def factory_label(ref: str, args: tuple[tuple[str, str], ...]) -> str:
    """The name a model made with `args` is stored under, so that two configurations of one
    factory are told apart: 'nets.py:make(depth=18)'; `ref` alone when there are none. Sorted
    by name: the order they were given in does not change the call."""
    if not args:
        return ref
    given = ", ".join(f"{name}={_factory_value(value)!r}" for name, value in sorted(args))
    return f"{ref}({given})"


def load_custom(ref: str, options: ModelOptions) -> Workload:
    """The workload for `ref`, checked as far as it can be without calling the model: it
    imports, its factory returns a Workload or an nn.Module, and the options fit."""
    factory = _with_args(_load_factory(ref), options.factory_args)
    label = factory_label(ref, options.factory_args)
    try:
        made = factory()
    except Exception as exc:
        called = label if options.factory_args else f"{ref}()"
        raise WorkloadError(f"{called} failed: {type(exc).__name__}: {exc}") from None
    if isinstance(made, Workload):
        made.name = factory_label(made.name or ref, options.factory_args)
        return made
    if is_causal_lm(made):
        return CausalLMWorkload(label, factory, made.config, options)
    if isinstance(made, nn.Module):
        # Its forward is not called here: `check` does that in the worker, under the timeout.
        return ModuleWorkload(label, factory, _from_config(options, made))
    raise WorkloadError(
        f"{ref} returned a {type(made).__name__}; it must return an accelbench Workload "
        "or a torch.nn.Module"
    )


def _load_factory(ref: str) -> Callable[[], Any]:
    where, sep, attr = ref.rpartition(":")
    if not sep and ref.endswith(".py"):  # a file, its factory left out
        defined = _callables(_import_file(ref))
        raise WorkloadError(
            f"{ref} names no factory: give {ref}:FACTORY, the function that returns your model "
            f"(callables there: {defined or 'none'})"
        )
    if not sep or not where or not attr:
        raise WorkloadError(f"--model wants FILE.py:factory or package.module:factory, got {ref!r}")
    module = _import_file(where) if where.endswith(".py") else _import_module(where)
    factory: object = getattr(module, attr, None)
    if not callable(factory):
        raise WorkloadError(
            f"{where} has no factory {attr!r} (callables there: {_callables(module) or 'none'})"
        )
    return factory


def _with_args(factory: Callable[[], Any], args: tuple[tuple[str, str], ...]) -> Callable[[], Any]:
    """The factory called with its --model-arg keyword arguments, each time it is called."""
    if not args:
        return factory
    kwargs = {name: _factory_value(value) for name, value in args}
    return lambda: factory(**kwargs)


def _callables(module: Any) -> str:
    """The public callables a module defines or imports, for a message."""
    return ", ".join(n for n in dir(module) if callable(getattr(module, n)) and n[0] != "_")


def _import_file(path_text: str) -> Any:
    path = Path(path_text)
    if not path.is_file():
        raise WorkloadError(f"cannot import {path_text}: no such file")
    _beside_on_path(path)
    # A stable, unique module name per file, so two models named model.py do not collide.
    name = "accelbench_user_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkloadError(f"cannot import {path_text}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise WorkloadError(f"cannot import {path_text}: {type(exc).__name__}: {exc}") from None
    return module


def _beside_on_path(path: Path) -> None:
    """Put the file's folder first on the import path, as Python does for a script, so that
    the file can import the modules beside it. It changes this process's path: only workers
    import a model's file."""
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)


def _import_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise WorkloadError(f"cannot import {name}: {type(exc).__name__}: {exc}") from None


def _from_config(options: ModelOptions, model: nn.Module) -> ModelOptions:
    """What a transformers model's config says that the options leave out: a text model takes
    token ids from its vocabulary, a classifier has its config's labels."""
    config = getattr(model, "config", None)
    vocab = getattr(config, "vocab_size", None)
    labels = getattr(config, "num_labels", None)
    found: dict[str, Any] = {}
    if options.vocab_size is None and isinstance(vocab, int) and vocab > 0:
        found["vocab_size"] = vocab
    wants_classes = options.loss == "cross-entropy" and options.num_classes is None
    if wants_classes and isinstance(labels, int) and labels > 0:
        found["num_classes"] = labels
    return replace(options, **found) if found else options


class ModuleWorkload(Workload):
    """A bare nn.Module from a factory, fed random inputs of the shape the user gave."""

    def __init__(self, ref: str, factory: Callable[[], nn.Module], options: ModelOptions) -> None:
        if not options.shapes():
            raise WorkloadError(
                f"{ref} returns an nn.Module: give --input-shape (e.g. 3x224x224, or 128 with "
                f"--vocab-size for token ids; {SHAPES_HINT})"
            )
        if options.input_names and len(options.input_names) != len(options.input_shapes):
            raise WorkloadError(f"{ref}: give a name for each input shape, or none")
        if options.loss not in LOSSES:
            raise WorkloadError(f"unknown --loss {options.loss!r}; valid: {', '.join(LOSSES)}")
        if options.loss == "cross-entropy" and options.num_classes is None:
            raise WorkloadError(f"{ref} returns an nn.Module: give --num-classes N or --loss mse")
        self.name = ref
        self.description = f"your model from {ref}"
        self._factory = factory
        self.options = options
        self.shapes = options.shapes()
        self.input_shape = self.shapes[0]  # the first input's: the one channels_last reads
        self.num_classes = options.num_classes if options.loss == "cross-entropy" else None
        self.batch_size = options.batch_size
        self._own_loss = False  # `check` finds whether it computes its own loss from labels

    def build_model(self) -> nn.Module:
        return self._factory()

    def make_batch(self, generator: torch.Generator, batch_size: int) -> Batch:
        inputs = self._inputs(generator, batch_size)
        if self.num_classes is not None:
            return inputs, torch.randint(0, self.num_classes, (batch_size,), generator=generator)
        return inputs, torch.empty(0)  # mse targets are drawn once the output shape is known

    def _inputs(self, generator: torch.Generator, batch_size: int) -> Inputs:
        """One random tensor per input: token ids for the first with a vocabulary, else
        standard-normal floats; a tuple or, with names, a dict where there are several."""
        vocab = self.options.vocab_size
        drawn = [
            torch.randint(0, vocab, (batch_size, *shape), generator=generator)
            if vocab and index == 0
            else torch.randn((batch_size, *shape), generator=generator)
            for index, shape in enumerate(self.shapes)
        ]
        if self.options.input_names:
            return dict(zip(self.options.input_names, drawn, strict=True))
        return drawn[0] if len(drawn) == 1 else tuple(drawn)

    def forward(self, model: nn.Module, inputs: Inputs) -> torch.Tensor:
        """The one tensor its output stands for (workloads/outputs: a ModelOutput's logits...)."""
        return output_tensor(call_model(model, inputs))[0]

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if self.num_classes is not None:
            return F.cross_entropy(outputs, targets)
        # Regression against a fixed target; zeros keep it deterministic and shape-agnostic.
        return F.mse_loss(outputs, torch.zeros_like(outputs))

    def train_loss(self, model: nn.Module, inputs: Inputs, targets: torch.Tensor) -> torch.Tensor:
        """The model's own loss where it computes one from labels (`check` found out), else
        the chosen loss on its output."""
        if self._own_loss:
            loss = own_loss(call_model(model, inputs, labels=targets))
            assert loss is not None  # `check` saw it
            return loss
        return self.loss(self.forward(model, inputs), targets)

    @property
    def images(self) -> bool:
        return len(self.input_shape) == 3 and not self.options.vocab_size  # the first input

    def check(self) -> None:
        """Run two samples through a fresh model on the CPU, so that a bad shape or output
        fails before timing, clearly; and find which of its outputs is timed and trained on
        (`output_note`). It runs the user's code: the worker calls it."""
        shape = ", ".join("x".join(map(str, (2, *one))) for one in self.shapes)
        try:  # making the inputs fails too when the shape is too large to allocate
            inputs, targets = self.make_batch(torch.Generator().manual_seed(0), 2)
            model = self.build_model().eval()
            with torch.no_grad():
                returned = call_model(model, inputs)
        except Exception as exc:
            raise WorkloadError(self._rejected(shape, exc)) from None
        try:
            out, which = output_tensor(returned)
        except TypeError as exc:
            raise WorkloadError(f"{self.name}: {exc}") from None
        if self.num_classes is not None and tuple(out.shape) != (2, self.num_classes):
            raise WorkloadError(
                f"{self.name} gives outputs of shape {tuple(out.shape)} for {shape} inputs; "
                f"--num-classes {self.num_classes} needs (2, {self.num_classes})"
            )
        self._own_loss = self._computes_its_loss(model, inputs, targets)
        notes = [f"timed on {which}"] if which else []
        if self._own_loss:
            notes.append("trained with its own loss (labels=)")
        self.output_note = "; ".join(notes)

    def _rejected(self, shape: str, exc: Exception) -> str:
        """Why the model refused its inputs, in one line; where its forward's arguments did
        not match (a TypeError), the routes that work: a shape per input, or a Workload."""
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        said = f"{self.name} rejects inputs of shape {shape}: {type(exc).__name__}: {first}"
        if not isinstance(exc, TypeError):
            return said
        return (
            f"{said}; give its forward {SHAPES_HINT}, or for other inputs write a Workload "
            f"whose make_batch returns them ({WORKLOAD_DOCS})"
        )

    def _computes_its_loss(self, model: nn.Module, inputs: Inputs, targets: torch.Tensor) -> bool:
        """Whether the model returns its own loss when given the labels (a transformers task
        head does); a classifier's only: a regression's targets are not its labels."""
        if self.num_classes is None or not accepts_labels(model):
            return False
        try:
            with torch.no_grad():
                return own_loss(call_model(model, inputs, labels=targets)) is not None
        except Exception:  # it takes labels, but not these: the chosen loss on its output
            return False


class CausalLMWorkload(LanguageModel):
    """Your transformers causal LM from a factory, fed random token ids from its vocabulary."""

    attention = ""  # whatever it was built or loaded with: the search offers sdpa and eager

    def __init__(
        self, ref: str, factory: Callable[[], nn.Module], config: Any, options: ModelOptions
    ) -> None:
        self.name = ref
        self.description = f"your causal language model from {ref}"
        self._factory = factory
        self._config = config
        if options.input_shape is not None:  # the sequence train and infer run
            self.input_shape = options.input_shape[-1:]

    def config(self) -> Any:
        return self._config

    def build_model(self) -> nn.Module:
        return self._factory()
