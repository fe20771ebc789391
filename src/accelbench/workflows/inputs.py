"""What a library caller may pass where a request keeps a tuple or a comma-separated string.

The CLI parses `--devices cpu,cuda --modes train`; a Python caller writes `devices="cpu"`,
`devices=("cpu", "cuda")`, `modes="train"`, `workloads="seed-cnn"` or one `WorkloadRef`. Each
request turns what it was given into its own type as it is made, here, so the rest of the code
sees one form; anything else is a UsageError in one line that says what the field takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import UsageError
from ..workloads import WorkloadRef

__all__ = ["device_names", "names", "settable", "sizes", "workload_ref", "workload_refs"]


def _items(field: str, value: object, takes: str) -> tuple[Any, ...]:
    """`value` as a tuple, when it is a sequence (not a string, bytes or a mapping)."""
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping)):
        return tuple(value)
    raise UsageError(f"{field} takes {takes}, not {value!r}")


def names(field: str, value: object) -> tuple[str, ...]:
    """A name, comma-separated names, or a sequence of names: `"train"`, `"train,infer"` or
    `("train", "infer")` are all `("train", "infer")`."""
    takes = "a name, comma-separated names or a sequence of names"
    parts = value.split(",") if isinstance(value, str) else _items(field, value, takes)
    bad = [part for part in parts if not isinstance(part, str)]
    if bad:
        raise UsageError(f"{field} takes {takes}, not {bad[0]!r}")
    return tuple(part.strip() for part in parts if part.strip())


def device_names(field: str, value: object) -> str:
    """The comma-separated names the device layer resolves, from a name, names or Devices
    (a Device is taken by its `name`)."""
    if isinstance(value, str):
        return value
    takes = 'a device name ("cpu", "cuda:0", "all"), comma-separated names or a sequence of them'
    one = isinstance(getattr(value, "name", None), str) and not isinstance(value, Iterable)
    given = [
        getattr(item, "name", item) for item in _items(field, (value,) if one else value, takes)
    ]
    bad = [item for item in given if not isinstance(item, str)]
    if bad or not given:
        raise UsageError(f"{field} takes {takes}, not {value!r}")
    return ",".join(given)


def sizes(field: str, value: object) -> tuple[Any, ...]:
    """One size (or None, the workload's own) or a sequence of them, as a tuple; each size is
    checked by the request itself."""
    if value is None or isinstance(value, int):
        return (value,)
    return _items(field, value, "a whole number, None or a sequence of them")


def settable(value: object) -> tuple[Any, ...]:
    """A lever's values: one value, or a sequence of values to try."""
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)


def workload_ref(field: str, value: object) -> WorkloadRef:
    """A workload by name (`"seed-cnn"`, `"model.py:make"`) or as a WorkloadRef."""
    if isinstance(value, WorkloadRef):
        return value
    if isinstance(value, str) and value.strip():
        return WorkloadRef(value.strip())
    if _is_module(value):
        raise UsageError(
            f"{field}: an nn.Module needs its input shape: WorkloadRef.from_module(model, "
            "ModelOptions(input_shape=(3, 32, 32), num_classes=10))"
        )
    raise UsageError(
        f"{field} takes a workload name (such as 'seed-cnn' or 'model.py:make') or a "
        f"WorkloadRef, not {value!r}"
    )


def workload_refs(field: str, value: object) -> tuple[WorkloadRef, ...]:
    """One workload (by name or WorkloadRef) or a sequence of them."""
    if isinstance(value, (str, WorkloadRef)) or _is_module(value):
        return (workload_ref(field, value),)
    takes = "a workload name, a WorkloadRef or a sequence of them"
    return tuple(workload_ref(field, item) for item in _items(field, value, takes))


def _is_module(value: object) -> bool:
    """Whether `value` is a torch nn.Module, without importing torch for the question."""
    return any(
        (cls.__module__, cls.__name__) == ("torch.nn.modules.module", "Module")
        for cls in type(value).__mro__
    )
