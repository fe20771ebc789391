"""A result's facts: typed values kept in `Result.metrics`, read and written by one codec.

`core` knows no fact: each is defined by the module that produces it, as a frozen dataclass
that derives from `Fact` and is registered with `@fact("key")`, or, for a single value stored
flat (`setup_s`), as a `scalar("key", hint, default)`. The codec is driven by the fields' type
hints: int, float, str, bool, `X | None`, `tuple[X, ...]`, `tuple[X, Y]`, `Mapping[K, V]` and
nested dataclasses. It keeps the stored JSON as writers have always stored it, so old
databases and export files read unchanged:

- a fact is a JSON object under its key; a field stored under another name says so with
  `stored("name")`, and one stored beside the object, at the metrics' top level, with
  `stored("key", beside=True)`. A fact registered `flat=True` has no object of its own: every
  field lies at the top level, and it is there when any of them holds a value.
- reading, a missing field or a null takes the field's default (an error where it has none),
  keys no field names are left alone (a later writer's), an int passes for a float, a bool never
  passes for a number.

`check` is what a stored row must pass (`Result.from_record`): every registered key it holds
reads, else a ValueError naming the key (`metrics.KEY ...`). A fact whose module was never
imported is not checked: the layers that read stored results import the facts they show.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, is_dataclass
from typing import Any, Generic, TypeVar, Union, get_args, get_origin, get_type_hints, overload

__all__ = [
    "Fact",
    "FactError",
    "Facts",
    "Scalar",
    "check",
    "decode",
    "encode",
    "fact",
    "kinds",
    "scalar",
    "stored",
]

T = TypeVar("T")
F = TypeVar("F", bound="Fact")
_DEEPEST = 16  # no writer nests deeper; a deeper file would overflow the stack of JSON encoding


class FactError(ValueError):
    """A stored fact that cannot be read, naming where (`metrics.probe.batch_size`)."""


class Fact:
    """A fact type's shared methods; subclasses are frozen dataclasses registered by `fact`."""

    @classmethod
    def from_record(cls: type[F], found: Mapping[str, Any]) -> F:
        """The value of a stored object (its fields only); FactError on a malformed one."""
        return decode(cls, found)

    @classmethod
    def from_metrics(cls: type[F], metrics: Mapping[str, Any], key: str = "") -> F | None:
        """The fact as `metrics` holds it under its key (or `key`), None where absent."""
        return _read(cls, metrics, key or _key_of(cls))

    def to_record(self) -> dict[str, Any]:
        """The value as a JSON object, its fields stored beside it included."""
        return _encode_fields(self)

    def to_metrics(self, key: str = "") -> dict[str, Any]:
        """The metrics entries that `from_metrics` reads back as this value."""
        return encode(self, key)


@dataclass(frozen=True)
class Scalar(Generic[T]):
    """A single value stored flat under `key` (`setup_s`), and what reads as its absence."""

    key: str
    hint: Any
    default: T

    def get(self, metrics: Mapping[str, Any]) -> T:
        found = metrics.get(self.key)
        if found is None:
            return self.default
        decoded: T = _decode(found, self.hint, f"metrics.{self.key}")  # checked against hint
        return decoded


Kind = type | Scalar[Any]
_REGISTRY: dict[str, Kind] = {}  # stored key -> the fact type or scalar stored under it
_KEYS: dict[type, str] = {}  # a fact type's own key
_FLAT: set[type] = set()
_EMPTY: set[type] = set()  # an empty object is the fact, not its absence


def _register(key: str, kind: Kind) -> None:
    if key in _REGISTRY and _REGISTRY[key] != kind:
        raise ValueError(f"fact key {key!r} is already registered for {_REGISTRY[key]}")
    _REGISTRY[key] = kind


def fact(
    key: str, *, flat: bool = False, also: tuple[str, ...] = (), empty: bool = False
) -> Callable[[type[F]], type[F]]:
    """Register a Fact dataclass stored under `key` (and `also` under each of those keys).
    With `flat`, its fields lie at the metrics' top level and `key` is one of them. An empty
    object reads as no fact, unless `empty`: then it is the fact with every field defaulted."""

    def register(cls: type[F]) -> type[F]:
        if not (is_dataclass(cls) and issubclass(cls, Fact)):
            raise TypeError(f"{cls.__name__} must be a dataclass deriving from Fact")
        flat_keys = [_name(f) for f in dataclasses.fields(cls)] if flat else []
        for name in dict.fromkeys((key, *also, *flat_keys)):
            _register(name, cls)
        _KEYS[cls] = key
        if flat:
            _FLAT.add(cls)
        if empty:
            _EMPTY.add(cls)
        return cls

    return register


def scalar(key: str, hint: Any, default: T) -> Scalar[T]:
    """Register a single value stored flat under `key`, e.g. `scalar("setup_s", float | None,
    None)`; `Facts.get` returns `default` where the metrics hold none."""
    found: Scalar[T] = Scalar(key, hint, default)
    _register(key, found)
    return found


def stored(name: str, *, beside: bool = False, default: Any = MISSING) -> Any:
    """A field stored under `name` rather than its own; `beside`: at the metrics' top level."""
    return dataclasses.field(default=default, metadata={"stored": name, "beside": beside})


def kinds() -> dict[str, Kind]:
    """Every registered key and what is stored under it."""
    return dict(_REGISTRY)


def _key_of(cls: type) -> str:
    if cls not in _KEYS:
        raise TypeError(f"{cls.__name__} is not a registered fact")
    return _KEYS[cls]


# --- writing ---------------------------------------------------------------------------


def encode(value: Fact, key: str = "") -> dict[str, Any]:
    """The metrics entries of a fact: its object under its key, the fields beside it beside."""
    cls = type(value)
    record = _encode_fields(value)
    beside = {name: record.pop(name) for name in _beside(cls)}
    if cls in _FLAT:
        return {**record, **beside}
    return {key or _key_of(cls): record, **beside}


def _encode_fields(value: Any) -> dict[str, Any]:
    return {_name(f): _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return _encode_fields(value)
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _name(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("stored", f.name))


def _beside(cls: type) -> tuple[str, ...]:
    """The stored names of the fields kept at the metrics' top level."""
    return _beside_of(cls)


@functools.cache
def _beside_of(cls: Any) -> tuple[str, ...]:
    """`_beside`, worked out once per class (a class is hashable; typeshed says otherwise)."""
    fields = dataclasses.fields(cls)
    return tuple(_name(f) for f in fields if f.metadata.get("beside") or cls in _FLAT)


# --- reading ---------------------------------------------------------------------------


def _read(cls: type[F], metrics: Mapping[str, Any], key: str) -> F | None:
    beside = {name: metrics[name] for name in _beside(cls) if metrics.get(name) is not None}
    if cls in _FLAT:  # there when any of its keys is
        return decode(cls, beside, "metrics") if beside else None
    found = metrics.get(key)
    if found is None or (isinstance(found, Mapping) and not found and cls not in _EMPTY):
        return None
    if not isinstance(found, Mapping):
        raise FactError(f"metrics.{key} has the wrong type ({type(found).__name__})")
    return decode(cls, {**found, **beside}, f"metrics.{key}")


Decoder = Callable[[Any, str], Any]  # a stored value and where it is -> the typed value


@dataclass(frozen=True)
class _Field:
    """How one field of a fact reads: worked out once per class (`_plan`), since every
    stored row is checked against it and resolving type hints is slow."""

    name: str  # the dataclass field's
    stored: str  # the key it is stored under
    beside: bool  # at the metrics' top level
    read: Decoder
    admits_none: bool
    required: bool


def decode(cls: type[T], found: Mapping[str, Any], where: str = "") -> T:
    """A dataclass from its stored object; FactError naming the first field it cannot take."""
    where = where or cls.__name__
    values = {}
    for f in _plan(cls):
        here = f"metrics.{f.stored}" if f.beside else f"{where}.{f.stored}"
        raw = found.get(f.stored)
        if raw is None and not f.admits_none:
            if f.required:
                raise FactError(f"{here} is missing")
            continue
        values[f.name] = f.read(raw, here)
    return cls(**values)


def _plan(cls: type) -> tuple[_Field, ...]:
    """A fact's fields with their types resolved once (`_plan_of`)."""
    return _plan_of(cls)


@functools.cache
def _plan_of(cls: Any) -> tuple[_Field, ...]:
    """A fact's fields with their types resolved once: every stored row is checked against
    them (`typing.get_type_hints` per value would dominate reading a store)."""
    hints = get_type_hints(cls)
    return tuple(
        _Field(
            name=f.name,
            stored=_name(f),
            beside=bool(f.metadata.get("beside")),
            read=_decoder(hints[f.name]),
            admits_none=_admits_none(hints[f.name]),
            required=f.default is MISSING and f.default_factory is MISSING,
        )
        for f in dataclasses.fields(cls)
    )


_SCALARS = frozenset({str, int, float, bool, type(None)})  # what JSON holds but containers


def _is_mapping(value: Any) -> bool:
    """isinstance(value, Mapping), with JSON's dict first: the ABC's check is slow, and
    reading a store asks it for every value of every row."""
    return type(value) is dict or isinstance(value, Mapping)


def _admits_none(hint: Any) -> bool:
    return hint is Any or (_is_union(hint) and type(None) in get_args(hint))


def _is_union(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType)


def _decode(value: Any, hint: Any, where: str) -> Any:
    """`value` as stored, made the annotated type: a list becomes a tuple, an int a float."""
    return _decoder(hint)(value, where)


@functools.cache
def _decoder(hint: Any) -> Decoder:
    """The reader of values of type `hint`, built once per type."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return lambda value, where: value
    if _is_union(hint):
        arms = tuple(_decoder(arm) for arm in args if arm is not type(None))
        return functools.partial(_decode_union, arms=arms, nullable=type(None) in args)
    if origin is tuple:
        if args[-1:] == (Ellipsis,):
            return functools.partial(_decode_sequence, item=_decoder(args[0]))
        return functools.partial(_decode_tuple, arms=tuple(_decoder(arm) for arm in args))
    if origin in (Mapping, dict):
        read_key, read_value = _decoder(args[0]), _decoder(args[1])
        return functools.partial(_decode_mapping, read_key=read_key, read_value=read_value)
    if isinstance(hint, type) and is_dataclass(hint):
        return functools.partial(_decode_nested, cls=hint)
    return functools.partial(_decode_plain, hint=hint)


def _decode_union(value: Any, where: str, arms: tuple[Decoder, ...], nullable: bool) -> Any:
    if value is None and nullable:
        return None
    for arm in arms:
        try:
            return arm(value, where)
        except FactError:
            continue
    raise _wrong(where, value)


def _decode_sequence(value: Any, where: str, item: Decoder) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        raise _wrong(where, value)
    return tuple(item(one, where) for one in value)


def _decode_tuple(value: Any, where: str, arms: tuple[Decoder, ...]) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)) or len(arms) != len(value):
        raise _wrong(where, value)
    return tuple(arm(one, where) for one, arm in zip(value, arms, strict=True))


def _decode_mapping(value: Any, where: str, read_key: Decoder, read_value: Decoder) -> Any:
    if not _is_mapping(value):
        raise _wrong(where, value)
    return {read_key(k, where): read_value(v, where) for k, v in value.items()}


def _decode_nested(value: Any, where: str, cls: type) -> Any:
    if not _is_mapping(value):
        raise _wrong(where, value)
    return decode(cls, value, where)


def _decode_plain(value: Any, where: str, hint: Any) -> Any:
    if isinstance(value, bool) and hint is not bool:  # a bool is an int to Python, not to us
        raise _wrong(where, value)
    if hint is float and isinstance(value, int):
        return float(value)
    if not isinstance(hint, type) or not isinstance(value, hint):
        raise _wrong(where, value)
    return value


def _wrong(where: str, value: Any) -> FactError:
    return FactError(f"{where} has the wrong type ({type(value).__name__})")


# --- checking and the typed view -------------------------------------------------------


def check(metrics: Mapping[str, Any]) -> None:
    """FactError naming the first registered key of `metrics` that does not read as its type,
    or nesting deeper than any writer makes. Keys no fact names are kept as they are."""
    _check_depth(metrics, "metrics", 0)
    flat_done: set[type] = set()  # a flat fact's keys are read together, once
    for key in metrics:
        kind = _REGISTRY.get(key)
        if isinstance(kind, Scalar):
            kind.get(metrics)
        elif kind is not None and kind not in flat_done:
            _read(kind, metrics, key)
            if kind in _FLAT:
                flat_done.add(kind)


def _check_depth(value: Any, where: str, depth: int) -> None:
    if depth > _DEEPEST:
        raise FactError(f"{where} nests deeper than {_DEEPEST} levels")
    children = value.values() if _is_mapping(value) else value
    for child in children:  # a scalar child costs a call only where it is too deep itself
        if type(child) in _SCALARS and depth < _DEEPEST:
            continue
        if isinstance(child, list) or _is_mapping(child) or depth >= _DEEPEST:
            _check_depth(child, where, depth + 1)


@dataclass(frozen=True)
class Facts:
    """A result's metrics read typed: `result.facts.get(Probe)`, `result.facts.get(SETUP)`."""

    raw: Mapping[str, Any]

    @overload
    def get(self, kind: Scalar[T]) -> T: ...

    @overload
    def get(self, kind: type[F], key: str = "") -> F | None: ...

    def get(self, kind: Any, key: str = "") -> Any:
        """The fact of type `kind` (None where absent), or a scalar's value (its default)."""
        if isinstance(kind, Scalar):
            return kind.get(self.raw)
        return _read(kind, self.raw, key or _key_of(kind))

    def get_or_default(self, kind: type[F]) -> F:
        """The fact, or where absent its value with every field defaulted (`Flops()`)."""
        return self.get(kind) or kind()
