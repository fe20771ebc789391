"""The facts' one codec: a fact type of the test suite's own, registered, goes through a Result,
the database and an export file unchanged; the codec reads what it wrote, takes defaults,
ignores a later writer's keys and names what it refuses."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from accelbench.core.facts import (
    Fact,
    FactError,
    Facts,
    check,
    decode,
    encode,
    fact,
    kinds,
    scalar,
    stored,
)
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.store.db import Store
from accelbench.store.results_file import read_export, write_export


@dataclass(frozen=True)
class Part:
    name: str
    weight: float = 1.0


@fact("test_toy")
@dataclass(frozen=True)
class Toy(Fact):
    count: int
    ratio: float
    label: str = ""
    ok: bool = False
    maybe: float | None = None
    steps: tuple[float, ...] = ()
    pair: tuple[int, str] | None = None
    parts: tuple[Part, ...] = ()
    table: Mapping[str, int] | None = None
    renamed: str = stored("old_name", default="")
    beside: float | None = stored("test_toy_beside", beside=True, default=None)


@fact("test_flat_a", flat=True)
@dataclass(frozen=True)
class Flat(Fact):
    a: int = stored("test_flat_a", default=0)
    b: str = stored("test_flat_b", default="")


TOY_SECONDS = scalar("test_toy_seconds", float | None, None)

TOY = Toy(
    3,
    0.5,
    "x",
    True,
    None,
    (0.1, 0.2),
    (4, "ok"),
    (Part("a"), Part("b", 2.0)),
    {"cpu": 2},
    "r",
    1.5,
)


def _result(metrics: dict[str, object]) -> Result:
    return Result(
        spec=RunSpec("mlp", "cpu", 8, 1),
        status="ok",
        measurement=Measurement((0.1,) * 6),
        metrics=metrics,
    )


def test_a_fact_reads_back_as_the_value_that_wrote_it():
    stored_json = json.loads(json.dumps(encode(TOY)))
    assert stored_json["test_toy"]["old_name"] == "r" and stored_json["test_toy_beside"] == 1.5
    assert "beside" not in stored_json["test_toy"] and "renamed" not in stored_json["test_toy"]
    assert Facts(stored_json).get(Toy) == TOY
    check(stored_json)


def test_absent_facts_read_as_none_and_scalars_as_their_default():
    assert Facts({}).get(Toy) is None and Facts({"test_toy": {}}).get(Toy) is None
    assert Facts({}).get(Flat) is None and Facts({}).get(TOY_SECONDS) is None
    assert Facts({"test_toy_seconds": 2}).get(TOY_SECONDS) == 2.0


def test_missing_fields_take_defaults_and_unknown_keys_are_left_alone():
    found = Facts({"test_toy": {"count": 1, "ratio": 2, "from_a_later_writer": [1]}}).get(Toy)
    assert found == Toy(1, 2.0) and isinstance(found.ratio, float)
    assert Facts({"test_toy": {"count": 1, "ratio": 2.0, "label": None}}).get(Toy) == Toy(1, 2.0)


def test_an_empty_object_is_the_fact_only_where_its_type_says_so():
    @fact("test_marker", empty=True)
    @dataclass(frozen=True)
    class Marker(Fact):
        note: str = ""

    assert Facts({"test_marker": {}}).get(Marker) == Marker()
    assert Facts({}).get(Marker) is None


def test_a_flat_fact_is_there_when_any_of_its_keys_is():
    assert Facts({"test_flat_b": "y"}).get(Flat) == Flat(0, "y")
    assert encode(Flat(2, "z")) == {"test_flat_a": 2, "test_flat_b": "z"}
    assert {"test_toy", "test_flat_a", "test_flat_b", "test_toy_seconds"} <= set(kinds())


@pytest.mark.parametrize(
    ("stored_json", "message"),
    [
        ({"test_toy": {"count": True, "ratio": 1.0}}, "metrics.test_toy.count has the wrong type"),
        ({"test_toy": {"count": 1, "ratio": False}}, "metrics.test_toy.ratio has the wrong type"),
        ({"test_toy": {"ratio": 1.0}}, "metrics.test_toy.count is missing"),
        ({"test_toy": "text"}, "metrics.test_toy has the wrong type (str)"),
        ({"test_toy": {"count": 1, "ratio": 1, "pair": [1]}}, "metrics.test_toy.pair"),
        ({"test_toy": {"count": 1, "ratio": 1, "parts": [{"weight": 1}]}}, "parts.name is"),
        ({"test_toy": {"count": 1, "ratio": 1, "table": {"a": "b"}}}, "metrics.test_toy.table"),
        ({"test_toy": {"count": 1, "ratio": 1}, "test_toy_beside": "x"}, "metrics.test_toy_beside"),
        ({"test_flat_a": "x"}, "metrics.test_flat_a has the wrong type (str)"),
        ({"test_toy_seconds": "x"}, "metrics.test_toy_seconds has the wrong type (str)"),
    ],
)
def test_check_names_what_it_refuses(stored_json, message):
    with pytest.raises(FactError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check(stored_json)


def test_decode_names_a_nested_dataclass_field():
    assert decode(Part, {"name": "a", "weight": 3}) == Part("a", 3.0)
    with pytest.raises(FactError, match="Part.weight has the wrong type"):
        decode(Part, {"name": "a", "weight": "3"})


def test_a_key_is_registered_once():
    with pytest.raises(ValueError, match="already registered"):
        scalar("test_toy", int, 0)


def test_a_toy_fact_goes_through_the_store_and_an_export_file(tmp_path):
    metrics = {**encode(TOY), **encode(Flat(1, "b")), "test_toy_seconds": 0.25}
    with Store(tmp_path / "r.db") as store:
        store.save(_result(metrics))
    with Store(tmp_path / "r.db") as store:
        (read,) = store.results()
    assert read.facts.get(Toy) == TOY and read.facts.get(Flat) == Flat(1, "b")
    assert read.facts.get(TOY_SECONDS) == 0.25
    path = tmp_path / "export.json"
    write_export([read], path)
    (imported,) = read_export(path)
    assert imported.facts.get(Toy) == TOY and imported.metrics == read.metrics
