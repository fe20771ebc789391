"""Your own model as you have it (issue 27, item 1): a transformers classifier, a module that
returns a dict, a tuple or a dataclass, trained and inferred through --model with no wrapper;
the notes say which output was timed and which loss trained it."""

from __future__ import annotations

import dataclasses
import json
import textwrap

import pytest
import torch

from accelbench.workloads.outputs import output_tensor, own_loss
from tests.conftest import run_cli

MODELS = textwrap.dedent(
    """
    import dataclasses

    import torch
    from torch import nn


    def bert():  # a transformers classifier: its config says its vocabulary and labels
        from transformers import BertConfig, BertForSequenceClassification

        config = BertConfig(vocab_size=500, hidden_size=32, num_hidden_layers=1,
                            num_attention_heads=2, intermediate_size=64, num_labels=3,
                            max_position_embeddings=32)
        return BertForSequenceClassification(config)


    class Dict(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return {"scores": self.fc(x)}


    class Pair(Dict):
        def forward(self, x):
            y = self.fc(x)
            return y, y.sum()


    @dataclasses.dataclass
    class Out:
        logits: torch.Tensor
        hidden: torch.Tensor


    class Classes(Dict):
        def forward(self, x):
            y = self.fc(x)
            return Out(y, y)


    def dict_():
        return Dict()


    def pair():
        return Pair()


    def classes():
        return Classes()
    """
)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "mine.py"
    path.write_text(MODELS)
    return path


def _run(models, factory: str, *options: str) -> list[dict]:
    out = run_cli(
        "run", "--model", f"{models}:{factory}", *options, "--devices", "cpu", "--modes",
        "train,infer", "--blocks", "2", "--rounds", "1", "--no-verdict", "--no-latency",
        "--json", "--db", str(models.with_name(f"{factory}.db")),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["results"]


def test_a_transformers_classifier_runs_as_it_is(models):
    train, infer = _run(models, "bert", "--input-shape", "16")  # no --vocab-size, no classes
    assert train["status"] == infer["status"] == "ok"
    said = train["metrics"]["model_output"]
    assert said == "timed on the logits of its SequenceClassifierOutput; trained with its own " \
        "loss (labels=)"  # fmt: skip
    assert infer["metrics"]["model_output"].startswith("timed on the logits")


@pytest.mark.parametrize(
    ("factory", "said"),
    [
        ("dict_", "timed on the one tensor of its dict (scores)"),
        ("pair", "timed on the one tensor of its tuple ([0])"),
        ("classes", "timed on the logits of its Out"),
    ],
)
def test_a_module_returning_a_structure_runs_on_its_output(models, factory, said):
    results = _run(models, factory, "--input-shape", "8", "--num-classes", "4")
    assert [r["status"] for r in results] == ["ok", "ok"]
    assert {r["metrics"]["model_output"] for r in results} == {said}


def test_output_tensor_and_own_loss():
    x = torch.ones(2, 3)
    assert output_tensor(x) == (x, "")
    assert output_tensor({"logits": x, "loss": x.sum()})[0] is x
    assert output_tensor((x, x * 2))[1] == "the first of the 2 tensors of its tuple"

    @dataclasses.dataclass
    class Out:
        loss: torch.Tensor
        logits: torch.Tensor

    assert own_loss(Out(x.sum(), x)) is not None and own_loss({"logits": x}) is None
    with pytest.raises(TypeError, match="holding a, b: which is the output"):
        output_tensor({"a": x, "b": x})


def test_a_model_file_without_its_factory_lists_the_callables_there(models):
    out = run_cli("run", "--model", str(models), "--input-shape", "8", "--devices", "cpu",
                  "--db", str(models.with_name("none.db")))  # fmt: skip
    assert out.returncode == 2 and out.stdout == ""
    line = out.stderr.strip()
    assert line.startswith(f"accelbench: error: {models} names no factory: give {models}:FACTORY")
    assert "bert" in line and "dict_" in line and "classes" in line


def test_export_needs_no_loss_and_names_the_file_after_its_file_and_factory(models, tmp_path):
    out = run_cli("export", "--model", f"{models}:dict_", "--input-shape", "8", "--to", "onnx",
                  "--out", str(tmp_path / "out"), "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    (report,) = json.loads(out.stdout)
    assert report["path"] == str((tmp_path / "out" / f"{models.stem}.dict_.fp32.onnx").resolve())
