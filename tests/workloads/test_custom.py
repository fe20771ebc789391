"""Custom models: --model FILE.py:factory and package.module:factory."""

import json
import textwrap

import pytest

from accelbench.errors import WorkloadError
from accelbench.workloads.custom import ModelOptions, load_custom, parse_shape
from tests.conftest import run_cli

MODELS = textwrap.dedent(
    """
    import torch
    from torch import nn

    from accelbench.workloads import Workload


    def tiny_cnn():
        return nn.Sequential(
            nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5)
        )


    def token_model():
        return nn.Sequential(nn.Embedding(50, 8), nn.Flatten(), nn.Linear(8 * 6, 3))


    class Regression(Workload):
        name = "my-regression"
        batch_size = 4
        input_shape = (7,)

        def build_model(self):
            return nn.Linear(7, 2)

        def make_batch(self, generator, batch_size):
            return torch.randn(batch_size, 7, generator=generator), torch.randn(batch_size, 2)

        def loss(self, outputs, targets):
            return nn.functional.mse_loss(outputs, targets)


    def regression():
        return Regression()


    def not_a_model():
        return 42


    def broken():
        raise RuntimeError("cannot build")
    """
)


@pytest.fixture
def models(tmp_path):
    path = tmp_path / "my_models.py"
    path.write_text(MODELS)
    return path


def test_a_module_factory_is_wrapped_from_the_options(models):
    w = load_custom(f"{models}:tiny_cnn", ModelOptions(input_shape=(3, 16, 16), num_classes=5))
    assert w.name.endswith("my_models.py:tiny_cnn")
    assert w.images and w.num_classes == 5
    inputs, labels = w.make_batch(__import__("torch").Generator().manual_seed(0), 4)
    assert inputs.shape == (4, 3, 16, 16) and labels.max() < 5


def test_token_inputs_with_a_vocabulary(models):
    options = ModelOptions(input_shape=(6,), num_classes=3, vocab_size=50)
    w = load_custom(f"{models}:token_model", options)
    inputs, _ = w.make_batch(__import__("torch").Generator().manual_seed(0), 4)
    assert inputs.dtype.is_floating_point is False and int(inputs.max()) < 50
    assert not w.images


def test_a_workload_factory_is_used_as_it_is(models):
    w = load_custom(f"{models}:regression", ModelOptions())
    assert w.name == "my-regression"


@pytest.mark.parametrize(
    "ref, options, message",
    [
        ("nofile.py:f", ModelOptions(), "cannot import nofile.py: no such file"),
        ("just_a_name", ModelOptions(), "--model wants FILE.py:factory or package.module:factory"),
        ("{models}:missing", ModelOptions(), "has no factory 'missing' (callables there: "),
        ("{models}:not_a_model", ModelOptions(), "returned a int; it must return"),
        ("{models}:broken", ModelOptions(), "broken() failed: RuntimeError: cannot build"),
        ("{models}:tiny_cnn", ModelOptions(num_classes=5), "give --input-shape"),
        ("{models}:tiny_cnn", ModelOptions(input_shape=(3, 16, 16)), "give --num-classes N"),
        (
            "{models}:tiny_cnn",
            ModelOptions(input_shape=(16, 16), num_classes=5),
            "rejects inputs of shape 2x16x16: RuntimeError",
        ),
        (
            "{models}:tiny_cnn",
            ModelOptions(input_shape=(3, 16, 16), num_classes=7),
            "gives outputs of shape (2, 5)",
        ),
        ("no_such_package_xyz.mod:f", ModelOptions(), "cannot import no_such_package_xyz.mod"),
    ],
)
def test_bad_custom_models_fail_in_one_clear_line(models, ref, options, message):
    with pytest.raises(WorkloadError) as caught:  # loading, or the check the worker makes
        load_custom(ref.format(models=models), options).check()
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("text, shape", [("3x224x224", (3, 224, 224)), ("128", (128,))])
def test_parse_shape(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize("text", ["", "3x", "0x3", "axb", "-1"])
def test_parse_shape_refuses_nonsense(text):
    with pytest.raises(WorkloadError, match="bad --input-shape"):
        parse_shape(text)


def test_cli_runs_a_model_from_a_file_the_test_writes(models, tmp_path):
    db = tmp_path / "r.db"
    out = run_cli(
        "run",
        "--model",
        f"{models}:tiny_cnn",
        "--input-shape",
        "3x16x16",
        "--num-classes",
        "5",
        "--devices",
        "cpu",
        "--modes",
        "train,infer",
        "--blocks",
        "2",
        "--json",
        "--db",
        str(db),
    )
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)["results"]
    assert [r["status"] for r in results] == ["ok", "ok"]
    assert results[0]["spec"]["workload"].endswith("my_models.py:tiny_cnn")


def test_cli_bad_model_is_one_line_exit_2(models, tmp_path):
    out = run_cli(
        "run",
        "--model",
        f"{models}:tiny_cnn",
        "--input-shape",
        "3x16x16",
        "--devices",
        "cpu",
        "--db",
        str(tmp_path / "r.db"),
    )
    assert out.returncode == 2
    assert "give --num-classes N or --loss mse" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.db").exists()  # checked before the database is opened
