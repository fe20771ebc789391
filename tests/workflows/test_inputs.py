"""Issue 37 item 12: a Python caller passes a name or a sequence where a request keeps a list,
a workload by name, an nn.Module with its input shape; every misuse is an AccelbenchError in
the line the command prints."""

from __future__ import annotations

import pytest

import accelbench
from accelbench import (
    BenchmarkRequest,
    CalibrateRequest,
    ExportRequest,
    OptimizeRequest,
    UsageError,
    VerifyRequest,
    WorkloadRef,
)
from tests.conftest import run_cli


def test_a_benchmark_request_takes_names_and_single_values():
    plain = BenchmarkRequest(
        workloads="mlp", devices=("cpu",), modes="train,infer", backends="torch",
        batch_sizes=8, levers={"precision": "bf16"},
    )  # fmt: skip
    assert plain.workloads == (WorkloadRef("mlp"),)
    assert plain.devices == "cpu"
    assert plain.modes == ("train", "infer") and plain.backends == ("torch",)
    assert plain.batch_sizes == (8,) and plain.levers == {"precision": ("bf16",)}
    several = BenchmarkRequest(workloads=["mlp", WorkloadRef("seed-cnn")], devices=["cpu", "all"])
    assert several.workloads == (WorkloadRef("mlp"), WorkloadRef("seed-cnn"))
    assert several.devices == "cpu,all"


def test_a_device_object_is_taken_by_its_name():
    (cpu,) = accelbench.resolve_devices("cpu")
    assert BenchmarkRequest(devices=cpu).devices == "cpu"
    assert VerifyRequest(devices=[cpu]).devices == "cpu"


def test_the_other_requests_take_names_too():
    assert OptimizeRequest(workload="mlp", levers="threads").levers == ("threads",)
    assert OptimizeRequest(workload="mlp").workload == WorkloadRef("mlp")
    verify = VerifyRequest(workload="mlp", devices=("cpu",), precisions="fp32,bf16")
    assert (verify.workload, verify.devices) == (WorkloadRef("mlp"), "cpu")
    assert verify.precisions == ("fp32", "bf16")
    assert ExportRequest(workload="mlp", targets="onnx").targets == ("onnx",)
    calibrate = CalibrateRequest(devices=["cpu"], precisions="fp32")
    assert (calibrate.devices, calibrate.precisions) == ("cpu", ("fp32",))


def test_a_device_that_is_no_name_is_refused_saying_what_devices_takes():
    with pytest.raises(UsageError, match=r'devices takes a device name \("cpu", "cuda:0", "all"\)'):
        BenchmarkRequest(devices=(3,))
    with pytest.raises(UsageError, match="devices takes a device name"):
        VerifyRequest(devices=())


def test_no_mode_at_all_is_refused_not_a_sweep_of_nothing():
    with pytest.raises(UsageError, match="modes takes at least one name, not ''"):
        BenchmarkRequest(modes="")
    with pytest.raises(UsageError, match=r"backends takes at least one name, not \(\)"):
        BenchmarkRequest(backends=())


def test_a_bare_module_is_refused_with_the_way_to_give_its_shape():
    from torch import nn

    with pytest.raises(UsageError, match=r"an nn.Module needs its input shape: WorkloadRef"):
        BenchmarkRequest(workloads=nn.Linear(4, 2))
    with pytest.raises(UsageError, match="from_module needs the input shape of one sample"):
        WorkloadRef.from_module(nn.Linear(4, 2), None)


@pytest.mark.parametrize(
    ("option", "value", "field"),
    [("--modes", "eval", "modes"), ("--backends", "tvm", "backends")],
)
def test_a_bad_word_reads_as_the_command_says_it(option, value, field):
    said = run_cli("run", "mlp", "--devices", "cpu", option, value, "--db", "unused.db")
    assert said.returncode == 2
    request = BenchmarkRequest(workloads="mlp", devices="cpu", **{field: value})
    with pytest.raises(UsageError) as caught:
        accelbench.benchmark(request)
    message = str(caught.value)  # the field's name, then the command's words
    assert message.startswith(f"{field}: ")
    assert f"argument {option}: {message.removeprefix(f'{field}: ')} (see" in said.stderr


def test_a_bad_device_reads_as_the_command_says_it():
    said = run_cli("run", "mlp", "--devices", "gpu", "--db", "unused.db")
    with pytest.raises(accelbench.DeviceError) as caught:
        accelbench.benchmark(BenchmarkRequest(workloads="mlp", devices=("gpu",)))
    assert said.stderr.strip().endswith(f"error: {caught.value}")


@pytest.mark.parametrize("workflow", ["benchmark", "explain", "optimize", "verify", "calibrate"])
def test_every_workflow_takes_db_by_keyword(workflow):
    import inspect

    db = inspect.signature(getattr(accelbench, workflow)).parameters["db"]
    assert db.kind is inspect.Parameter.KEYWORD_ONLY
