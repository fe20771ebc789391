"""The cudnn_benchmark and optimizer levers: their words and labels, where they do not apply,
and the optimizer lever on a real CPU training build (fused SGD runs on the CPU in torch 2.4+)."""

import dataclasses
import importlib

import pytest
import torch

from accelbench.backends.pytorch import build_torch
from accelbench.devices import resolve_devices
from accelbench.engine.runner import make_spec
from accelbench.levers import find_lever, label
from accelbench.workloads import get_workload

SGD_MODULE = importlib.import_module("torch.optim.sgd")  # torch.optim.sgd is the function
CPU = resolve_devices("cpu")[0]
CNN = get_workload("seed-cnn")
CUDNN, OPTIMIZER = find_lever("cudnn_benchmark"), find_lever("optimizer")


def test_words_round_trip_and_label():
    for lever in (CUDNN, OPTIMIZER):
        assert all(lever.word(lever.parse(w)) == w for w in lever.words)
        with pytest.raises(ValueError, match="valid"):
            lever.parse("fast")
    assert (CUDNN.option, CUDNN.dimension, CUDNN.parse("on")) == (
        "--cudnn-benchmark",
        "cudnn-benchmark",
        True,
    )
    assert OPTIMIZER.parse("default") == "" and OPTIMIZER.baseline_word() == "default"
    spec = make_spec(CNN, CPU, mode="train", optimizer="fused", cudnn_benchmark=True)
    assert label(spec).endswith("cudnn_benchmark optimizer:fused")
    assert OPTIMIZER.label("") == "" and OPTIMIZER.code(spec, CPU)[0].count("fused=True") == 1


def test_cudnn_benchmark_needs_cuda_and_images():
    spec = make_spec(CNN, CPU, cudnn_benchmark=True)
    assert CUDNN.unsupported(spec, CPU, CNN) == "cpu has no cuDNN"
    assert CUDNN.variants(spec, CPU, CNN) == [] and CUDNN.not_tried("", spec, CPU, CNN)
    gpu = dataclasses.replace(CPU, name="cuda:0", kind="cuda")  # only its kind is read
    assert CUDNN.unsupported(spec, gpu, CNN) is None
    assert [v.name for v in CUDNN.variants(spec, gpu, CNN)] == ["cudnn.benchmark"]
    mlp = get_workload("mlp")
    assert "not images" in CUDNN.unsupported(make_spec(mlp, gpu), gpu, mlp)


def test_cudnn_benchmark_sets_the_flag():
    before = torch.backends.cudnn.benchmark
    try:
        CUDNN.apply_model(None, True)  # it touches no Prepared, only the global
        assert torch.backends.cudnn.benchmark is True
    finally:
        torch.backends.cudnn.benchmark = before


def test_the_optimizer_lever_is_for_training_only():
    infer = make_spec(CNN, CPU, mode="infer", optimizer="fused")
    assert "no optimizer step" in OPTIMIZER.unsupported(infer, CPU, CNN)
    assert OPTIMIZER.variants(infer, CPU, CNN) == [] and OPTIMIZER.not_tried("", infer, CPU, CNN)
    train = make_spec(CNN, CPU, mode="train")
    assert OPTIMIZER.unsupported(train, CPU, CNN) is None
    variants = OPTIMIZER.variants(train, CPU, CNN)
    assert [(v.name, v.spec.lever("optimizer", "")) for v in variants] == [
        ("fused optimizer", "fused"),
        ("foreach optimizer", "foreach"),
    ]


@pytest.mark.parametrize(
    ("impl", "kernel", "flags"),
    [("fused", "_fused_sgd", (True, False)), ("foreach", "_multi_tensor_sgd", (False, True))],
)
def test_the_optimizer_lever_on_a_cpu_training_build(monkeypatch, impl, kernel, flags):
    prep = build_torch(make_spec(CNN, CPU, mode="train", batch_size=4, optimizer=impl), CNN, CPU)
    assert all((g["fused"], g["foreach"]) == flags for g in prep.optimizer.param_groups)
    calls = []
    real = getattr(SGD_MODULE, kernel)
    monkeypatch.setattr(SGD_MODULE, kernel, lambda *a, **k: calls.append(1) or real(*a, **k))
    before = [p.detach().clone() for p in prep.model.parameters()]
    prep.step()
    assert calls == [1]  # the implementation asked for is the one that ran
    after = prep.model.parameters()
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


class _Plain(torch.optim.Optimizer):
    def __init__(self, params):
        super().__init__(params, {"lr": 0.1})


def _prep(optimizer):
    prep = build_torch(make_spec(CNN, CPU, mode="train", batch_size=4), CNN, CPU)
    prep.optimizer = optimizer(prep.model.parameters())
    return prep


def test_an_optimizer_without_the_option_is_a_clear_error():
    prep = _prep(_Plain)
    with pytest.raises(ValueError, match="_Plain has no fused option"):
        OPTIMIZER.apply_step(prep, "fused")


def test_fused_checks_the_parameters_first():
    prep = _prep(lambda params: torch.optim.SGD(params, lr=0.1))
    prep.optimizer.param_groups[0]["params"] = [torch.zeros(2, dtype=torch.int64)]
    with pytest.raises(ValueError, match="fused SGD needs floating-point parameters"):
        OPTIMIZER.apply_step(prep, "fused")
