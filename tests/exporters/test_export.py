"""Export: ONNX validated with ONNX Runtime, Core ML converted and its structure checked."""

import json
import sys

import numpy as np
import pytest

from accelbench.errors import UsageError
from accelbench.exporters import export_model
from accelbench.exporters.common import atomic_path
from accelbench.exporters.coreml import export_coreml
from accelbench.exporters.onnx import export_onnx
from accelbench.workloads import get_workload
from tests.conftest import run_cli

EXPORTERS = {"onnx": export_onnx, "coreml": export_coreml}


def test_onnx_export_validates_against_pytorch(tmp_path):
    pytest.importorskip("onnxruntime")
    (report,) = export_model(get_workload("seed-cnn"), ["onnx"], tmp_path, EXPORTERS)
    assert report.facts["exporter"] == "torch.onnx.export (torch.export)"
    assert report.facts["opset"] >= 17 and report.facts["ops"] > 5
    assert {"Conv", "Gemm"} <= set(report.facts["op_types"])
    assert report.validation["ok"] is True
    assert report.validation["max_rel_error"] < 1e-4
    assert (tmp_path / "seed-cnn.fp32.onnx").stat().st_size == report.facts["bytes"]


def test_a_dynamic_batch_runs_at_another_batch_size(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    (report,) = export_model(
        get_workload("seed-cnn"), ["onnx"], tmp_path, EXPORTERS, batch=2, dynamic_batch=True
    )
    session = ort.InferenceSession(report.path, providers=["CPUExecutionProvider"])
    out = session.run(None, {"inputs": np.random.rand(5, 3, 64, 64).astype(np.float32)})[0]
    assert out.shape == (5, 10)


@pytest.mark.skipif(sys.platform == "darwin", reason="on macOS Core ML predicts for real")
def test_coreml_conversion_is_checked_and_says_prediction_needs_macos(tmp_path):
    pytest.importorskip("coremltools")
    (report,) = export_model(get_workload("seed-cnn"), ["coreml"], tmp_path, EXPORTERS)
    assert report.facts["inputs"] == {"inputs": [1, 3, 64, 64]}
    assert list(report.facts["outputs"].values()) == [[1, 10]]
    assert report.facts["ops"] > 5
    assert report.validation["ok"] is None and "needs macOS" in report.validation["skipped"]
    assert (tmp_path / "seed-cnn.fp32.mlpackage").is_dir()


def test_a_missing_package_is_named(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # importing it now fails
    with pytest.raises(
        UsageError,
        match=r"onnx is needed for exporting to onnx: pip install 'accelbench\[export\]'",
    ):
        export_model(get_workload("mlp"), ["onnx"], tmp_path, EXPORTERS)


def test_no_partial_file_is_left_behind(tmp_path):
    final = tmp_path / "model.onnx"
    with pytest.raises(RuntimeError), atomic_path(final) as partial:
        partial.write_bytes(b"half a mod")
        raise RuntimeError("the exporter died")
    assert list(tmp_path.iterdir()) == []


def test_cli_export_json_and_bad_input(tmp_path):
    pytest.importorskip("onnxruntime")
    out = run_cli("export", "mlp", "--to", "onnx", "--out", str(tmp_path), "--json")
    assert out.returncode == 0, out.stderr
    (report,) = json.loads(out.stdout)  # progress went to stderr: stdout is only JSON
    assert report["validation"]["ok"] is True
    (tmp_path / "a-file").write_text("")
    impossible = run_cli("export", "mlp", "--out", str(tmp_path / "a-file" / "sub"))
    assert impossible.returncode == 2 and "cannot create the directory" in impossible.stderr
    neither = run_cli("export", "--out", str(tmp_path))
    assert neither.returncode == 2 and "name one workload" in neither.stderr
    target = run_cli("export", "mlp", "--to", "tflite")
    assert target.returncode == 2 and "invalid value 'tflite'; valid: onnx, coreml" in target.stderr
    endless = run_cli("export", "mlp", "--out", str(tmp_path), "--timeout", "inf")
    assert endless.returncode == 2 and endless.stdout == ""
    assert endless.stderr == (
        "accelbench export: error: argument --timeout: must be a number of seconds above 0 and "
        "at most 604,800 (a week), got inf (see accelbench export --help)\n"
    )


def test_the_timeouts_shown_in_help_are_the_librarys():
    """The parser holds no torch, so it has its own copy of each default: the same."""
    from accelbench.cli import export as export_cli
    from accelbench.cli import verify as verify_cli
    from accelbench.cli.main import build_parser
    from accelbench.workflows import export, verify

    assert export_cli.DEFAULT_TIMEOUT_S == export.DEFAULT_TIMEOUT_S == 900
    assert verify_cli.DEFAULT_TIMEOUT_S == verify.DEFAULT_TIMEOUT_S == 1800
    for command, seconds in (("export", 900), ("verify", 1800)):
        assert build_parser().parse_args([command, "mlp"]).timeout == seconds
        shown = " ".join(run_cli(command, "--help").stdout.split())
        assert f"(default: {seconds})" in shown


def test_export_is_a_function_returning_what_the_command_renders(tmp_path):
    """The library exports as `accelbench export` does, from a typed request."""
    pytest.importorskip("onnxruntime")
    import accelbench

    request = accelbench.ExportRequest(
        workload=accelbench.WorkloadRef("mlp"), targets=("onnx",), out=tmp_path / "models"
    )
    exported = accelbench.export(request)
    (report,) = exported.reports
    assert exported.paths == (tmp_path / "models" / "mlp.fp32.onnx",)
    assert exported.paths[0].stat().st_size == report.facts["bytes"]
    assert report.validation["ok"] is True and exported.failed == ()


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"targets": ("tflite",)}, "unknown export target 'tflite'; valid: onnx, coreml"),
        ({"targets": ()}, "unknown export target none; valid: onnx, coreml"),
        ({"precision": "bf16"}, "unknown export precision 'bf16'; valid: fp32, fp16"),
        ({"compute_units": "GPU"}, "unknown export compute units 'GPU'; valid: ALL,"),
        ({"batch": 0}, "batch must be a positive integer, not 0"),
        ({"workload": 3}, "workload takes a workload name"),
        ({"timeout": float("inf")}, "timeout must be a finite number of seconds above 0, not inf"),
        ({"timeout": 0}, "timeout must be a finite number of seconds above 0, not 0"),
        ({"timeout": True}, "timeout must be a finite number of seconds above 0, not True"),
    ],
)
def test_an_export_request_checks_itself_as_it_is_made(fields, said):
    from accelbench import ExportRequest

    with pytest.raises(UsageError, match=said):
        ExportRequest(**fields)


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v3_large", "bert-base"])
def test_seed_001_models_export_to_onnx_and_convert_to_coreml(tmp_path, name):
    """The issue's models: ONNX validated against PyTorch, Core ML converted and checked."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("coremltools")
    onnx_report, coreml_report = export_model(
        get_workload(name), ["onnx", "coreml"], tmp_path, EXPORTERS
    )
    assert onnx_report.validation["ok"] is True, onnx_report.validation
    assert coreml_report.facts["ops"] > 100
    assert len(coreml_report.facts["inputs"]) == 1 and len(coreml_report.facts["outputs"]) == 1


def test_an_example_batch_too_large_for_memory_is_one_line(tmp_path, monkeypatch):
    """4e16 bytes: no machine's allocator gives that, and none overcommits it."""
    workload = get_workload("mlp")  # the registry's own object: changed for this test only
    monkeypatch.setattr(workload, "input_shape", (10**7,))
    with pytest.raises(UsageError, match="out of memory exporting mlp with an example batch of "
                       "1,000,000,000: try a smaller --batch-size"):  # fmt: skip
        export_model(workload, ["onnx"], tmp_path, EXPORTERS, batch=10**9)
    assert list(tmp_path.iterdir()) == []
