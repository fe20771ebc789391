"""Pruning: unstructured zeros keep every shape; channel pruning makes the model smaller and it
still runs; both are inference levers, refused for training with the reason; whether a model
has anything to prune is found in the worker, never while the command plans."""

import json

import pytest
import torch
from torch import nn

from accelbench.backends import build
from accelbench.core.result import RunSpec
from accelbench.devices import resolve_devices
from accelbench.engine.runner import run_one
from accelbench.levers import label, refused_by_model, spec_with, unsupported_reason
from accelbench.levers.prune import parse_pruning
from accelbench.levers.prune_model import prune_model
from accelbench.workloads import Workload, get_workload
from accelbench.workloads.base import random_images
from accelbench.workloads.described import described, facts_of
from tests.conftest import run_cli

CPU = resolve_devices("cpu")[0]
PRUNABLE = (nn.Conv2d, nn.Linear)


def _spec(pruning, workload="seed-cnn", mode="infer", batch=4):
    return spec_with(RunSpec(workload, "cpu", batch, 1, mode=mode), pruning=pruning)


def _weights(model):
    return {name: m.weight for name, m in model.named_modules() if isinstance(m, PRUNABLE)}


def test_unstructured_zeroes_the_amount_of_each_layer_and_keeps_every_shape():
    workload = get_workload("seed-cnn")
    plain = build(_spec(""), workload, CPU).model
    prep = build(_spec("unstructured:0.5"), workload, CPU)
    pruned = _weights(prep.model)
    assert {n: w.shape for n, w in pruned.items()} == {
        n: w.shape for n, w in _weights(plain).items()
    }
    for name, weight in pruned.items():
        zeros = float((weight == 0).float().mean())
        assert zeros == pytest.approx(0.5, abs=0.01), name
        kept = weight != 0  # the survivors are the original weights, the largest in magnitude
        assert torch.equal(weight[kept], _weights(plain)[name][kept])
        assert weight.abs().max() == _weights(plain)[name].abs().max()
    assert not any(hasattr(m, "weight_mask") for m in prep.model.modules())  # made permanent
    info = prep.info["pruning"]
    assert (
        info["params_before"] == info["params_after"] == sum(p.numel() for p in plain.parameters())
    )
    assert info["zero_fraction"] == pytest.approx(0.5, abs=0.01)


def test_channel_pruning_shrinks_seed_cnn_deterministically_and_it_still_runs():
    workload = get_workload("seed-cnn")
    prep = build(_spec("channels:0.5"), workload, CPU)
    info = prep.info["pruning"]
    assert info["params_after"] < info["params_before"]
    # Its forward hard-codes x.view(-1, 16 * 13 * 13): conv2 keeps its 16 channels, conv1 halves.
    assert prep.model.conv1.out_channels == 3 and prep.model.conv2.out_channels == 16
    assert info["flops_per_sample"] < 0.6 * 7155600  # conv2 reads half the channels now
    with torch.inference_mode():
        assert workload.forward(prep.model, prep.batch[0]).shape == (4, 10)
    again = build(_spec("channels:0.5"), workload, CPU).model.state_dict()
    first = prep.model.state_dict()
    assert again.keys() == first.keys() and all(torch.equal(again[k], first[k]) for k in first)


def test_channel_pruning_of_resnet50_removes_channels_behind_residual_additions():
    workload = get_workload("resnet50")
    torch.manual_seed(0)
    model = workload.build_model().eval()
    inputs = random_images(torch.Generator().manual_seed(0), 2, (3, 64, 64), 1000)[0]
    model, info = prune_model(model, inputs, workload.forward, "channels", 0.3)
    assert info["params_before"] == 25_557_032
    assert info["params_after"] < 0.6 * info["params_before"]
    assert model.fc.out_features == 1000  # the classes stay
    block = model.layer1[0]
    assert block.conv1.out_channels == 44  # 64 less 30%, rounded up by torch_pruning
    # The residual additions tie these together: they lose the same channels.
    widths = {block.conv3.out_channels, block.downsample[0].out_channels}
    widths |= {b.conv3.out_channels for b in model.layer1}
    assert widths == {179}  # 256 less 30%
    with torch.no_grad():
        assert model(inputs).shape == (2, 1000)


class _FlattenedByHand(Workload):
    """A convolution whose output size the forward hard-codes: nothing else to prune."""

    name = "flattened"
    batch_size = 2
    input_shape = (3, 8, 8)
    num_classes = 4

    def build_model(self):
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3)
                self.fc = nn.Linear(8 * 6 * 6, 4)

            def forward(self, x):
                return self.fc(self.conv(x).view(-1, 8 * 6 * 6))

        return Net()

    def make_batch(self, generator, batch_size):
        return random_images(generator, batch_size, self.input_shape, 4)


def test_what_cannot_be_pruned_is_unsupported_with_a_one_line_reason():
    train = unsupported_reason(_spec("channels:0.5", mode="train"), CPU, get_workload("seed-cnn"))
    assert train and "pruning is an inference lever here" in train
    mlp = get_workload("mlp")
    # what the model can take is found by pruning it: in the worker (refused_by_model)
    assert unsupported_reason(_spec("channels:0.5", "mlp"), CPU, mlp) is None
    assert "has no convolutions" in refused_by_model(_spec("channels:0.5", "mlp"), mlp)
    assert refused_by_model(_spec("unstructured:0.5", "mlp"), mlp) is None
    flat = refused_by_model(_spec("channels:0.5", "flattened"), _FlattenedByHand())
    assert flat == (
        "pruning: flattened: no convolution channel can be removed without changing the output"
    )
    result = run_one(get_workload("seed-cnn"), CPU, blocks=1, pruning="channels:0.5")
    assert result.status == "unsupported" and "inference lever" in result.error
    result = run_one(_FlattenedByHand(), CPU, blocks=1, mode="infer", pruning="channels:0.5")
    assert (result.status, result.error) == ("unsupported", flat)


def test_planning_a_pruned_variant_never_builds_the_model():
    """The command plans a --model from a worker's facts; building it there is a bug."""
    facts = facts_of(get_workload("seed-cnn"))
    for pruning in ("unstructured:0.5", "channels:0.3"):
        spec = _spec(pruning)
        assert unsupported_reason(spec, CPU, described(facts)) is None
        with pytest.raises(RuntimeError, match="only workers may"):
            refused_by_model(spec, described(facts))


CNN = """
from torch import nn


def make_cnn():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10),
    )
"""


def test_optimize_tries_pruning_on_a_model_file_in_the_workers(tmp_path):
    """The pruning lever's check builds the model: it ran in the command and crashed it."""
    (tmp_path / "cnn.py").write_text(CNN)
    out = run_cli(
        *("optimize", "--model", f"{tmp_path / 'cnn.py'}:make_cnn", "--input-shape", "3x16x16"),
        *("--num-classes", "10", "--device", "cpu", "--mode", "infer", "--levers", "pruning"),
        *("--blocks", "2", "--budget", "600", "--json", "--db", str(tmp_path / "o.db")),
        timeout=900,
    )
    # the budget is not under test: at 120 s, fp32 eager's three processes of 20 s (a loaded
    # host) and the 60 s held for confirming left the pruned variants no room
    assert out.returncode == 0, out.stderr
    assert "accelbench bug" not in out.stdout + out.stderr
    ran = {v["variant"]: (v["status"], v["error"]) for v in json.loads(out.stdout)["variants"]}
    assert ran == {
        "fp32 eager": ("ok", ""),
        "pruned unstructured:0.5": ("ok", ""),
        "pruned channels:0.3": ("ok", ""),
    }


def test_a_pruned_run_reports_its_parameters_in_the_metrics():
    result = run_one(get_workload("mlp"), CPU, blocks=2, mode="infer", pruning="unstructured:0.5")
    assert result.status == "ok", result.error
    assert result.metrics["pruning"] == {
        "method": "unstructured:0.5",
        "params_before": 11,
        "params_after": 11,
        "zero_fraction": 0.5,
    }


@pytest.mark.parametrize(
    "text, message",
    [
        ("dense:0.5", "invalid pruning 'dense:0.5'; valid: none, unstructured:AMOUNT"),
        ("channels", "invalid pruning 'channels'"),
        ("channels:1", "between 0 and 1"),
        ("channels:half", "'half' is not a number"),
    ],
)
def test_bad_pruning_values_name_the_valid_ones(text, message):
    with pytest.raises(ValueError, match=message):
        parse_pruning(text)


def test_labels_name_the_pruning():
    assert label(_spec("unstructured:0.5")) == "infer fp32 b4 pruned-unstructured:0.5"
    assert label(_spec("channels:0.3")).endswith("pruned-channels:0.3")
    assert parse_pruning("channels:0.3") == ("channels", 0.3)
