"""ONNX Runtime as a benchmark backend: one row per execution provider, int8 by quantization,
each checked against the fp32 PyTorch model."""

import json
import sys
import textwrap

import pytest
import torch

from accelbench import devices
from accelbench.analysis.drift import compare_outputs
from accelbench.backends import expand_backends, unsupported
from accelbench.backends.onnxruntime import backend_name, require_onnxruntime
from accelbench.devices import Device, resolve_devices
from accelbench.engine.runner import make_spec, run_one
from accelbench.errors import UsageError
from accelbench.workloads import get_workload
from tests.conftest import run_cli

pytest.importorskip("onnxruntime")
CPU = resolve_devices("cpu")[0]
# A GPU as ONNX Runtime would see it; this machine's onnxruntime has only the CPU provider.
FAKE_GPU = Device("cuda:0", "cuda", True, "", backend=devices.BACKENDS["cuda"])


def test_onnxruntime_expands_to_each_provider_of_the_device():
    assert expand_backends(("torch", "onnxruntime"), CPU) == ["torch", "onnxruntime-cpu"]
    assert expand_backends(("onnxruntime", "onnxruntime-cpu"), CPU) == ["onnxruntime-cpu"]
    if torch.version.hip is None:
        cuda = ["onnxruntime-cuda", "onnxruntime-tensorrt"]
        assert expand_backends(("onnxruntime",), FAKE_GPU) == cuda


@pytest.mark.parametrize(
    ("options", "device", "reason"),
    [
        ({"mode": "train"}, CPU, "benchmarked for inference"),
        ({"channels_last": True}, CPU, "channels_last is a PyTorch option"),
        ({"precision": "bf16"}, CPU, "not bf16"),
        ({"precision": "tf32"}, CPU, "switch of ONNX Runtime's CUDA provider"),
        ({"backend": "onnxruntime-cuda"}, CPU, "takes ONNX Runtime backends onnxruntime-cpu"),
        ({"backend": "onnxruntime-cuda"}, FAKE_GPU, "no CUDAExecutionProvider"),
        ({"backend": "onnxruntime-cuda", "precision": "int8"}, FAKE_GPU, "int8 runs on CPU"),
        ({"backend": "torch", "precision": "int8"}, CPU, "add --backends onnxruntime"),
    ],
)
def test_what_onnxruntime_cannot_run_says_why(options, device, reason):
    workload = get_workload("seed-cnn")
    spec = make_spec(workload, device, **{"mode": "infer", "backend": "onnxruntime-cpu", **options})
    if device is FAKE_GPU and torch.version.hip is not None:
        pytest.skip("a ROCm build names other providers")
    assert reason in (unsupported(spec, device, workload) or "")


@pytest.mark.parametrize(("precision", "most_error"), [("fp32", 1e-4), ("int8", 0.2)])
def test_a_session_is_timed_and_checked_against_pytorch(precision, most_error):
    result = run_one(
        get_workload("seed-cnn"),
        CPU,
        blocks=3,
        mode="infer",
        precision=precision,
        batch_size=16,
        backend="onnxruntime-cpu",
    )
    assert result.status == "ok", result.error
    assert len(result.measurement.samples) == 3 and min(result.measurement.samples) > 0
    drift = result.metrics["drift"]
    assert 0 <= drift["max_rel_error"] < most_error and drift["samples"] == 16
    assert 0.5 <= drift["top1_agreement"] <= 1.0
    assert result.metrics["onnxruntime"]["providers"] == ["CPUExecutionProvider"]
    if precision == "fp32":
        assert drift["top1_agreement"] == 1.0


def test_drift_counts_top1_disagreements_and_non_finite_outputs():
    reference = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 1.0], [0.0, 1.0]])
    flipped = reference.clone()
    flipped[0] = torch.tensor([0.0, 1.0])  # one sample's top-1 class changes
    drift = compare_outputs(reference, flipped, classifier=True)
    assert drift["top1_agreement"] == 0.75
    assert drift["max_rel_error"] == pytest.approx(1 / 3)
    broken = compare_outputs(reference, reference * float("nan"), classifier=False)
    assert broken["not_finite"] and broken["max_rel_error"] is None  # JSON has no infinity
    assert "top1_agreement" not in broken and "not a classifier" in broken["top1_unavailable"]


def test_a_missing_onnxruntime_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # importing it now fails
    with pytest.raises(UsageError, match=r"pip install 'accelbench\[export\]'"):
        require_onnxruntime()


def test_cli_runs_torch_and_onnxruntime_side_by_side_and_compares_them(tmp_path):
    db = str(tmp_path / "r.db")
    common = ["--devices", "cpu", "--modes", "infer", "--batch-sizes", "8", "--db", db]
    run = run_cli(
        "run", "seed-cnn", *common, "--backends", "torch,onnxruntime", "--blocks", "6",
        "--no-verdict", "--quiet", "--json",
        "--rounds", "1", "--no-latency",  # one process (one ONNX export) each: enough here
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)["results"]
    assert [r["spec"]["backend"] for r in results] == ["torch", "onnxruntime-cpu"]
    assert all(r["status"] == "ok" for r in results)
    compare = run_cli("compare", "--by", "backend", "--db", db)
    assert compare.returncode == 0, compare.stderr
    assert "onnxruntime-cpu" in compare.stdout and "torch" in compare.stdout
    bad = run_cli("run", "seed-cnn", *common, "--backends", "tensorflow")
    assert bad.returncode == 2 and "valid: torch, onnxruntime" in bad.stderr


def test_an_operator_no_exporter_takes_is_named(tmp_path):
    model = tmp_path / "odd.py"
    model.write_text(
        textwrap.dedent(
            """
            import torch

            @torch.library.custom_op("accelbench_test::mystery", mutates_args=())
            def mystery(x: torch.Tensor) -> torch.Tensor:
                return x.sin()

            @mystery.register_fake
            def _(x):
                return torch.empty_like(x)

            class Odd(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = torch.nn.Linear(8, 3)

                def forward(self, x):
                    return self.fc(mystery(x))
            """
        )
    )
    out = tmp_path / "out"
    out.mkdir()
    export = run_cli(
        "export", "--model", f"{model}:Odd", "--input-shape", "8", "--num-classes", "3",
        "--to", "onnx", "--out", str(out), "--json",
    )  # fmt: skip
    assert export.returncode == 2
    assert "neither exporter takes the operator accelbench_test.mystery" in export.stderr
    assert export.stdout == "" and list(out.iterdir()) == []  # no partial file


def test_the_cli_lists_every_provider_backend_a_device_kind_offers():
    from accelbench.cli import run as cli

    offered = [p for b in devices.BACKENDS.values() for p in b.onnxruntime_providers]
    offered += ["ROCMExecutionProvider", "MIGraphXExecutionProvider"]  # a ROCm build's
    ort = {b for b in cli.BACKENDS if b.startswith("onnxruntime-")}  # coreml's are Core ML's
    assert {backend_name(p) for p in offered} == ort
