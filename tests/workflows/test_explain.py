"""explain: where a step's time goes, from injected profiler events and from the real CLI."""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

from accelbench.analysis.explain import (
    KernelEvent,
    OpEvent,
    Profile,
    RuntimeEvent,
    busy_seconds,
    category,
    explain,
)
from accelbench.analysis.explanation import IDLE, Explanation
from accelbench.analysis.verdict import Timing, judge
from accelbench.engine.profile import _Watch, fallback_warnings
from tests.conftest import run_cli


def _profile() -> Profile:
    """Two steps of 4 ms each: kernels overlap in the first, the device idles between."""
    ms = 1e-3
    kernels = (
        KernelEvent("volta_sgemm_128x64_nn", 0.0, 1 * ms),
        KernelEvent("vectorized_elementwise_kernel", 0.5 * ms, 2 * ms),  # overlaps the gemm
        KernelEvent("Memcpy DtoH (Device -> Pageable)", 3 * ms, 3.5 * ms),
        KernelEvent("volta_sgemm_128x64_nn", 4 * ms, 5 * ms),
    )
    ops = (
        OpEvent("aten::mm", "aten::linear", 10e-6, (("volta_sgemm_128x64_nn", 1 * ms),) * 2),
        OpEvent("aten::relu", "aten::relu", 5e-6, (("vectorized_elementwise_kernel", 1.5 * ms),)),
        OpEvent("aten::_local_scalar_dense", "aten::item", 2e-6),
    )
    runtime = (
        RuntimeEvent("cudaLaunchKernel", "aten::mm"),
        RuntimeEvent("cudaStreamSynchronize", "aten::_local_scalar_dense"),
        RuntimeEvent("cudaDeviceSynchronize", ""),  # accelbench's own, at the boundary
    )
    return Profile("cuda", 2, 8 * ms, ops, kernels, runtime)


def test_busy_time_is_the_union_of_kernel_intervals():
    assert busy_seconds(_profile().kernels or ()) == pytest.approx(3.5e-3)
    assert busy_seconds([]) == 0


def test_injected_events_give_a_known_busy_share_kernels_and_categories():
    found = explain(_profile(), measured_step_s=4e-3)
    assert found.device_busy_s == pytest.approx(1.75e-3)  # 3.5 ms over 2 steps
    assert found.busy_share == pytest.approx(1.75 / 4)
    assert found.kernels_per_step == 2
    assert found.mean_kernel_s == pytest.approx(4e-3 / 4)  # 4 ms of kernels, 4 launches
    shares = dict(found.shares())
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares[IDLE] == pytest.approx(1 - 1.75 / 4)
    assert set(shares) == {
        "matmul and convolution",
        "elementwise and activations",
        "copy device to host",  # the memcpy no operator claimed, by its kernel name
        IDLE,
    }
    assert sum(s for _, s in found.categories) == pytest.approx(4e-3)
    assert found.top_kernels[0].name == "volta_sgemm_128x64_nn"
    assert found.top_operators[0].name == "aten::mm"
    # the runtime's stream synchronize, named by its operator; accelbench's own is not listed
    assert [s.operator for s in found.syncs] == ["aten::_local_scalar_dense"]


def test_host_only_profile_puts_the_unclaimed_step_under_other():
    profile = Profile(
        "host", 1, 0.01, (OpEvent("aten::conv2d", "aten::conv2d", 0.004),), None, (), "no kernels"
    )
    found = explain(profile, measured_step_s=0.01)
    assert found.busy_share is None and found.kernels_per_step is None
    assert dict(found.categories) == pytest.approx(
        {"matmul and convolution": 0.004, "other": 0.006}
    )
    assert found.notes == ("host only: no kernels",)


def test_categories_follow_the_outermost_name_first():
    assert category("Optimizer.step#SGD.step", "aten::mul_") == "optimizer"
    assert category("aten::scaled_dot_product_attention", "aten::bmm") == "attention"
    assert category("aten::batch_norm", "aten::cudnn_batch_norm") == "normalization"
    assert category("Memcpy HtoD (Pageable -> Device)") == "copy host to device"
    assert category("some_custom_kernel") == "other"


def test_the_record_round_trips():
    found = explain(_profile(), measured_step_s=4e-3)
    assert Explanation.from_record(json.loads(json.dumps(found.to_record()))) == found


def test_the_verdict_takes_the_profile_first_and_says_when_the_probe_disagrees():
    base = Timing(batch=64, step_s=1.5e-3, probe_batch=16, probe_step_s=1.45e-3)
    agreed = judge(Timing(**{**vars(base), "busy_share": 0.21, "kernels_per_step": 61}))
    assert agreed.kind == "launch-bound"
    assert "busy 21% of the step" in agreed.explanation and "61 kernels" not in agreed.explanation
    busy = judge(Timing(**{**vars(base), "busy_share": 0.95}))
    assert busy.kind == "undetermined"  # not launch-bound; no peaks to tell compute from memory
    assert "the batch probe disagrees" in busy.explanation


def test_an_impossible_or_straddling_probe_is_undetermined():
    faster = judge(Timing(batch=64, step_s=0.175, probe_batch=16, probe_step_s=0.404))
    assert faster.kind == "undetermined" and "too noisy" in faster.explanation
    slower = judge(Timing(batch=64, step_s=1.0, probe_batch=16, probe_step_s=1.0 / 42.41))
    assert slower.kind == "undetermined"
    wide = Timing(
        batch=64,
        step_s=0.012,
        probe_batch=16,
        probe_step_s=0.01,
        step_ci=(0.009, 0.016),
        probe_ci=(0.009, 0.011),
    )  # 1.2x, but anywhere from 0.82x to 1.78x: both sides of the 1.3x line
    assert judge(wide).kind == "undetermined"
    tight = Timing(**{**vars(wide), "step_ci": (0.0119, 0.0121), "probe_ci": (0.0099, 0.0101)})
    assert judge(tight).kind == "launch-bound"


def test_the_dispatch_check_names_cpu_work_when_the_device_is_another():
    watch = _Watch("cuda")  # the configuration's device; these tensors are on the CPU
    with watch:
        x = torch.ones(4, 4)
        (x @ x).sum().item()
    ops = {op for op, _ in watch.on_cpu}
    assert "aten::mm" in ops
    assert [op for op, _ in watch.syncs] == ["aten::_local_scalar_dense"]
    (where,) = {where for _, where in watch.syncs}
    assert "test_explain.py" in where


def test_mps_fallback_warnings_are_collected_and_others_pass_through():
    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        with fallback_warnings(active=True) as found:
            warnings.warn(
                "The operator 'aten::linalg_svd' is not currently supported on the MPS backend "
                "and will fall back to run on the CPU. This may have performance implications.",
                stacklevel=1,
            )
            warnings.warn("something else", stacklevel=1)
    assert found == ["aten::linalg_svd"]
    assert [str(w.message) for w in outer] == ["something else"]


MODEL = """
import torch
from torch import nn


class Chatty(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        y = self.fc(x.flatten(1))
        if y.mean().item() > 1e9:  # the host waits for the device here
            y = y * 0
        return y


def make():
    return Chatty()
"""


def test_explain_names_an_item_inside_the_forward_and_the_record_survives_export(tmp_path):
    model = tmp_path / "chatty.py"
    model.write_text(textwrap.dedent(MODEL))
    db, trace = tmp_path / "a.db", tmp_path / "trace.json"
    model_args = ("--model", f"{model}:make", "--input-shape", "32", "--num-classes", "10")
    out = run_cli(
        "explain",
        *model_args,
        "--device",
        "cpu",
        "--blocks",
        "3",
        "--trace",
        str(trace),
        "--db",
        str(db),
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "synchronization inside the step: aten::_local_scalar_dense" in out.stdout
    assert "chatty.py:13 in forward" in out.stdout
    assert "host only" in out.stdout
    assert json.loads(trace.read_text())["traceEvents"]
    listed = json.loads(run_cli("results", "--json", "--db", str(db)).stdout)
    record = listed[0]["metrics"]["explain"]
    shares = Explanation.from_record(record).shares()
    assert sum(share for _, share in shares) == pytest.approx(1.0, abs=0.005)
    exported, other = tmp_path / "out.json", tmp_path / "b.db"
    assert run_cli("results", "export", "--out", str(exported), "--db", str(db)).returncode == 0
    assert run_cli("results", "import", str(exported), "--db", str(other)).returncode == 0
    again = json.loads(run_cli("results", "--json", "--db", str(other)).stdout)
    assert again[0]["metrics"]["explain"] == record
    report = run_cli("report", "--format", "markdown", "--db", str(other))
    assert "aten::_local_scalar_dense" in report.stdout
    page = tmp_path / "report.html"
    assert run_cli("report", "--out", str(page), "--db", str(other)).returncode == 0
    html = page.read_text()
    assert "Where the step&#x27;s time went" in html and "<th>host time a step</th>" in html


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--precision", "fp32,bf16"), "argument --precision: one value, not a list"),
        (("--precisions", "bf16"), "unknown option --precisions (did you mean --precision?)"),
        (("--trace", "/nonexistent/dir/t.json"), "no such directory"),
        (("--trace", "/tmp"), "is a directory"),
    ],
)
def test_explain_refuses_what_it_cannot_do_in_one_line(tmp_path, args, message):
    out = run_cli("explain", "mlp", "--device", "cpu", *args, "--db", str(tmp_path / "x.db"))
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.db").exists()  # refused before the store was opened


def test_run_profile_refuses_data_parallel_and_a_trace_of_many(tmp_path):
    db = str(tmp_path / "x.db")
    many = run_cli(
        "run",
        "mlp",
        "--devices",
        "cpu",
        "--modes",
        "train,infer",
        "--trace",
        str(tmp_path / "t.json"),
        "--db",
        db,
    )
    assert many.returncode == 2 and "one configuration's trace" in many.stderr
    ddp = run_cli(
        "run", "mlp", "--devices", "cpu", "--nproc-per-node", "2", "--profile", "--db", db
    )
    assert ddp.returncode == 2 and "--profile profiles one process" in ddp.stderr


def test_the_library_returns_the_same_record(tmp_path):
    import accelbench

    request = accelbench.BenchmarkRequest(
        workloads=(accelbench.WorkloadRef("mlp"),), devices="cpu", modes=("infer",), epochs=2
    )
    found = accelbench.explain(request, db=tmp_path / "l.db")
    assert isinstance(found, accelbench.Explanation)
    assert found.activity == "host" and found.steps >= 3
    assert found.syncs == ()  # mlp's step waits on nothing


def test_the_library_refuses_a_request_of_several_configurations(tmp_path):
    import accelbench

    several = accelbench.BenchmarkRequest(
        workloads=(accelbench.WorkloadRef("mlp"),), devices="cpu", modes=("train", "infer")
    )
    with pytest.raises(accelbench.UsageError, match="explain takes one configuration"):
        accelbench.explain(several, db=tmp_path / "l.db")
    with pytest.raises(accelbench.UsageError, match="explain takes a BenchmarkRequest"):
        accelbench.explain("mlp")


def test_a_result_that_was_not_profiled_says_why(tmp_path):
    path: Path = tmp_path
    out = run_cli(
        "run",
        "mlp",
        "--devices",
        "cpu",
        "--modes",
        "infer",
        "--blocks",
        "2",
        "--profile",
        "--backends",
        "onnxruntime-cpu",
        "--db",
        str(path / "o.db"),
    )
    if "onnxruntime" in out.stderr and out.returncode == 2:
        pytest.skip("onnxruntime is not installed here")
    assert "not profiled: ONNX Runtime's sessions run outside PyTorch's profiler" in out.stdout
