"""A batch's inputs as one tensor, a tuple or a dict (workloads/inputs), and the options that
describe them (workloads/custom): in-process, no model file."""

import pytest
import torch

from accelbench.errors import WorkloadError
from accelbench.workloads.custom import (
    ModelOptions,
    factory_label,
    load_custom,
    parse_input_shapes,
)
from accelbench.workloads.inputs import (
    call_model,
    first_samples,
    samples_in,
    several,
    shapes_text,
    to_device,
)


def _seen(*args, **kwargs):
    return args, kwargs


def test_a_model_is_called_as_its_inputs_say():
    x, y = torch.zeros(2, 3), torch.ones(2, 4)
    assert call_model(_seen, x) == ((x,), {})
    assert call_model(_seen, (x, y), labels=1) == ((x, y), {"labels": 1})
    assert call_model(_seen, {"image": x, "meta": y}) == ((), {"image": x, "meta": y})


def test_every_tensor_is_moved_and_sliced_in_its_structure():
    batch = {"image": torch.zeros(4, 3, 2, 2), "meta": torch.ones(4, 5, dtype=torch.float64)}
    moved = to_device(batch, "meta")
    assert set(moved) == {"image", "meta"} and all(t.is_meta for t in moved.values())
    assert moved["meta"].dtype == torch.float64
    head = first_samples(batch, 2)
    assert head["image"].shape == (2, 3, 2, 2) and head["meta"].shape == (2, 5)
    assert samples_in((torch.zeros(3, 1), torch.zeros(3))) == 3
    assert shapes_text(batch) == "image=4x3x2x2, meta=4x5"
    assert several(batch) and several((batch["image"],)) and not several(batch["image"])


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("3x32x32", ((3, 32, 32), (), ())),
        ("3x32x32,4", ((), ((3, 32, 32), (4,)), ())),
        ("image=3x32x32, meta=4", ((), ((3, 32, 32), (4,)), ("image", "meta"))),
        ("ids=128", ((), ((128,),), ("ids",))),
    ],
)
def test_input_shapes_in_order_or_by_name(text, parsed):
    assert parse_input_shapes(text) == parsed


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("image=3x8x8,4", "name every input or none"),
        ("a=1,a=2", "a name given twice"),
        ("2x=3", "'2x' is not an argument name"),
        ("3x8,", "bad --input-shape ''"),
    ],
)
def test_bad_input_shapes_say_why(text, problem):
    with pytest.raises(WorkloadError, match="bad --input-shape") as raised:
        parse_input_shapes(text)
    assert problem in str(raised.value)


def test_a_factorys_arguments_are_read_as_literals_else_text():
    args = (("depth", "18"), ("name", "resnet18"), ("scale", "0.5"), ("sizes", "[1, 2]"))
    label = factory_label("nets.py:make", args)
    assert label == "nets.py:make(depth=18, name='resnet18', scale=0.5, sizes=[1, 2])"
    assert factory_label("nets.py:make", ()) == "nets.py:make"
    assert factory_label("m.py:f", (("b", "2"), ("a", "1"))) == "m.py:f(a=1, b=2)"


def test_a_factorys_argument_given_twice_is_refused():
    with pytest.raises(WorkloadError, match="--model-arg depth given twice"):
        ModelOptions(factory_args=(("depth", "1"), ("depth", "2")))


def test_a_factorys_arguments_reach_it(tmp_path):
    path = tmp_path / "nets.py"
    path.write_text("from torch import nn\n\ndef make(width=4):\n    return nn.Linear(2, width)\n")
    options = ModelOptions(input_shape=(2,), loss="mse", factory_args=(("width", "6"),))
    workload = load_custom(f"{path}:make", options)
    assert workload.build_model().out_features == 6
    assert workload.name == f"{path}:make(width=6)"
