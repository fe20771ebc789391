"""The Mac paths (MPS and Core ML), which cannot run here: each is checked with fakes.

None of these tests executes MPS or Core ML; they show that the code calls the documented APIs
in the right order and reports what they return truthfully.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import accelbench.backends.coreml as coreml
import accelbench.devices.mps as mps
from accelbench.analysis.facts import LOAD_S, CoreMLFacts
from accelbench.backends import expand_backends
from accelbench.core.facts import Facts
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.devices import HostTimer, resolve_devices
from accelbench.devices.base import DtypeSupport
from accelbench.devices.cpu import CpuBackend
from accelbench.devices.mps import MpsBackend, SampledPeak
from accelbench.engine.facts import CPU_FALLBACK_OPS, FALLBACK_OPS
from accelbench.engine.maxbatch import find_max_batch
from accelbench.engine.runner import run_one
from accelbench.exporters.coreml import COMPUTE_UNITS
from accelbench.render.console.run import run_tables
from accelbench.workloads import get_workload
from accelbench.workloads.seed import SeedMLP

CPU = resolve_devices("cpu")[0]
FALLBACK_TEXT = (
    "The operator 'aten::{}' is not currently supported on the MPS backend and will fall back "
    "to run on the CPU. This may have performance implications."
)


def fake_mps(bf16: bool = True) -> object:
    """An MPS device as discovery makes it on a Mac (not used to run anything here)."""
    dtypes = DtypeSupport(fp16=True, bf16=bf16, tf32=False)
    return MpsBackend().available_device(
        model="Apple M2 Max", total_memory=24 * 2**30, dtypes=dtypes, details=()
    )


# --- item 1: the timer -------------------------------------------------------------------


def test_the_mps_timer_synchronizes_before_reading_the_host_clock(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(torch.mps, "synchronize", lambda: calls.append("synchronize"))

    def no_events(**_: object) -> None:
        raise AssertionError("torch.mps.event.Event must not time MPS (pytorch#196395)")

    monkeypatch.setattr(torch.mps.event, "Event", no_events)
    timer = MpsBackend().timer(0)
    assert isinstance(timer, HostTimer)
    ticks = itertools.count(1.0)
    timer._clock = lambda: calls.append("clock") or next(ticks)  # record the read's order
    timer.start()
    timer.stop()
    assert calls == ["synchronize", "clock", "synchronize", "clock"]
    assert timer.elapsed() == 1.0


def test_the_xpu_timer_is_the_host_clock_too():
    from accelbench.devices.xpu import XpuBackend

    assert isinstance(XpuBackend().timer(0), HostTimer)


# --- item 2: the CPU fallback ------------------------------------------------------------


class _FallbackCpu(CpuBackend):
    """A CPU that says, as MPS does with PYTORCH_ENABLE_MPS_FALLBACK=1, that operators may
    silently run on the CPU."""

    def cpu_fallback(self) -> str:
        return "PYTORCH_ENABLE_MPS_FALLBACK=1: operators MPS lacks run on the CPU"


class _FallingBack(SeedMLP):
    """A model whose step emits PyTorch's MPS fallback warning, as an operator MPS lacks does."""

    name = "falls-back"

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        warnings.warn(FALLBACK_TEXT.format("linalg_svd"), UserWarning, stacklevel=1)
        return super().loss(outputs, targets)


def test_fallen_back_operators_are_named_without_a_profile_and_the_row_is_flagged():
    device = replace(CPU, backend=_FallbackCpu())
    result = run_one(_FallingBack(), device, blocks=2)
    assert result.status == "ok"
    assert result.metrics[CPU_FALLBACK_OPS] == ["aten::linalg_svd"]
    text = run_tables([result], width=400)
    assert "(partly on the CPU)" in text
    assert "partly on the CPU: aten::linalg_svd fell back to the CPU" in text


def test_no_fallback_watch_where_the_device_runs_every_operator():
    result = run_one(_FallingBack(), CPU, blocks=2)
    assert CPU_FALLBACK_OPS not in result.metrics
    assert "partly on the CPU" not in run_tables([result], width=400)


def test_every_mps_result_records_whether_the_fallback_was_on(monkeypatch):
    monkeypatch.delenv("PYTORCH_ENABLE_MPS_FALLBACK", raising=False)
    assert MpsBackend().runtime_facts(0) == {"mps_cpu_fallback": "disabled"}
    monkeypatch.setenv("PYTORCH_ENABLE_MPS_FALLBACK", "1")
    assert MpsBackend().runtime_facts(0)["mps_cpu_fallback"].startswith("enabled")


# --- item 3: memory ----------------------------------------------------------------------


def test_the_sampler_reports_the_largest_value_it_saw():
    values = iter([10, 70, 40, 20, 20])
    sampler = SampledPeak(lambda: next(values, 5), interval=0.001)
    with sampler:
        deadline = time.monotonic() + 5
        while sampler._peak != 70 and time.monotonic() < deadline:
            time.sleep(0.001)  # the thread reads the counter every millisecond
    reading = sampler.reading()
    assert reading is not None and reading.bytes == 70
    assert "sampled every" in reading.meaning
    assert SampledPeak(lambda: 1).reading() is None  # never entered: nothing sampled


class _SampledCpu(CpuBackend):
    """A CPU whose memory is read as MPS's is: sampled from a fake driver counter."""

    def peak_sampler(self, index: int) -> SampledPeak:
        values = itertools.chain([1 << 50, 3 << 50], itertools.repeat(2 << 50))
        return SampledPeak(lambda: next(values), interval=0.001)


def test_a_run_on_a_device_without_a_peak_counter_reports_the_sampled_peak():
    result = run_one(get_workload("mlp"), replace(CPU, backend=_SampledCpu()), blocks=3)
    assert result.peak_memory == 3 << 50
    assert result.peak_memory_meaning == mps.SAMPLED_MEANING
    assert "sampled every 0.1 s during the timed samples" in mps.SAMPLED_MEANING


SPEC = RunSpec("resnet50", "mps", 32, 1)


def _probe(spec: RunSpec, seconds_per_sample: float, peak: int = 1 << 30) -> Result:
    per_step = seconds_per_sample * spec.batch_size
    return Result(
        spec=spec, status="ok", measurement=Measurement((per_step, per_step)), peak_memory=peak
    )


def test_the_max_batch_search_treats_a_swap_slowdown_as_not_fitting():
    # per-sample time is flat up to 256, then 3x worse: memory spilled to swap
    def run(spec: RunSpec) -> Result:
        return _probe(spec, 1e-3 if spec.batch_size <= 256 else 3e-3)

    found = find_max_batch(SPEC, run, swap_limit=24 * 2**30)
    assert found.largest is not None and found.largest.spec.batch_size == 256
    assert (512, "swap") in found.probes
    assert "swap slowdown: 3.0x the time per sample of batch 256" in found.stopped_by
    blind = find_max_batch(SPEC, run)  # without the watch the slowdown passes for a fit
    assert blind.largest is not None and blind.largest.spec.batch_size > 256


def test_the_max_batch_search_stops_at_the_recommended_maximum():
    def run(spec: RunSpec) -> Result:
        return _probe(spec, 1e-3, peak=spec.batch_size * (100 << 20))  # 100 MiB a sample

    found = find_max_batch(SPEC, run, swap_limit=10 << 30)
    assert found.largest is not None and found.largest.spec.batch_size == 102
    assert "recommended maximum" in found.stopped_by


def test_only_mps_spills_to_swap():
    assert fake_mps().swap_limit == 24 * 2**30
    assert CPU.swap_limit is None


# --- item 4: the reasons -----------------------------------------------------------------


def test_compile_on_mps_before_pytorch_2_8_says_why(monkeypatch):
    monkeypatch.setattr(mps, "_torch_version", lambda: (2, 7))
    result = run_one(get_workload("mlp"), fake_mps(), blocks=1, compile="default")
    assert result.status == "unsupported"
    assert "needs PyTorch 2.8 or later (MPSInductor)" in result.error
    monkeypatch.setattr(mps, "_torch_version", lambda: (2, 8))
    assert fake_mps().compile_unsupported() == ""


def test_data_parallelism_on_mps_says_there_is_no_collective_backend():
    result = run_one(get_workload("mlp"), fake_mps(), blocks=1, processes=2)
    assert result.status == "unsupported"
    assert "MPS has no torch.distributed collective backend" in result.error


def test_bf16_on_mps_before_macos_14_says_so(monkeypatch):
    monkeypatch.setattr(mps, "macos_major", lambda: 13)
    result = run_one(get_workload("mlp"), fake_mps(bf16=False), blocks=1, precision="bf16")
    assert result.status == "unsupported"
    assert "bf16 on MPS needs macOS 14 (Sonoma) or later; this is macOS 13" in result.error
    tf32 = run_one(get_workload("mlp"), fake_mps(), blocks=1, precision="tf32")
    assert "MPS has no TF32 mode" in tf32.error


def test_other_devices_keep_the_plain_reason():
    result = run_one(get_workload("mlp"), CPU, blocks=1, precision="tf32")
    assert result.status == "unsupported" and "cpu does not run tf32" in result.error


def test_the_views_read_what_the_writers_store():
    assert Facts({CPU_FALLBACK_OPS: ["aten::a", "aten::b"]}).get(FALLBACK_OPS) == (
        "aten::a",
        "aten::b",
    )
    with pytest.raises(ValueError, match="cpu_fallback_ops"):
        from accelbench.core.facts import check

        check({CPU_FALLBACK_OPS: "aten::a"})


# --- item 5: Core ML, with a fake coremltools --------------------------------------------


class MLCPUComputeDevice:  # named as coremltools.models.compute_device names its classes
    pass


class MLGPUComputeDevice:
    pass


class MLNeuralEngineComputeDevice:
    pass


class FakeCoreML:
    """Records what accelbench asks of coremltools; loading sleeps, the first predict is slow."""

    __version__ = "9.0-fake"
    LOAD_S = 0.05
    COLD_S = 0.03
    PLAN = {"conv": MLGPUComputeDevice, "relu": MLGPUComputeDevice, "linear": MLCPUComputeDevice}

    def __init__(self, with_plan: bool = True) -> None:
        self.calls: list[str] = []
        self.precision = SimpleNamespace(FLOAT16="FLOAT16", FLOAT32="FLOAT32")
        self.ComputeUnit = SimpleNamespace(**{u: u for u in COMPUTE_UNITS})
        utils = SimpleNamespace(compile_model=self._compile_model)
        plan = SimpleNamespace(MLComputePlan=SimpleNamespace(load_from_path=self._plan))
        self.models = SimpleNamespace(utils=utils, CompiledMLModel=self._load)
        if with_plan:
            self.models.compute_plan = plan

    def convert(self, program: object, **options: object) -> object:
        self.calls.append(f"convert {options['compute_precision']}")
        spec = SimpleNamespace(description=SimpleNamespace(input=[SimpleNamespace(name="x_in")]))
        return SimpleNamespace(save=lambda path: Path(path).mkdir(), get_spec=lambda: spec)

    def _compile_model(self, source: str, destination: str) -> str:
        self.calls.append("compile")
        Path(destination).mkdir()
        return destination

    def _load(self, path: str, compute_units: str) -> object:
        self.calls.append(f"load {compute_units}")
        time.sleep(self.LOAD_S)
        predictions = itertools.count()

        def predict(feed: dict[str, object]) -> dict[str, object]:
            assert list(feed) == ["x_in"]
            if next(predictions) == 0:
                time.sleep(self.COLD_S)  # a cold start
            return {"y": np.zeros((100, 1), dtype=np.float32)}

        return SimpleNamespace(predict=predict)

    def _plan(self, path: str, compute_units: str) -> object:
        names = ["const", "conv", "relu", "linear", "softmax"]
        ops = [SimpleNamespace(operator_name=name) for name in names]
        main = SimpleNamespace(block=SimpleNamespace(operations=ops))
        program = SimpleNamespace(functions={"main": main})

        def usage(op: SimpleNamespace) -> object:
            unit = self.PLAN.get(op.operator_name)  # softmax: the plan cannot tell
            return None if unit is None else SimpleNamespace(preferred_compute_device=unit())

        return SimpleNamespace(
            model_structure=SimpleNamespace(program=program),
            get_compute_device_usage_for_mlprogram_operation=usage,
        )


class _MacCpu(CpuBackend):
    """The host, standing in for the Mac's mps device that Core ML rows are filed under."""

    hosts_coreml = True


@pytest.fixture
def fake_coreml(monkeypatch, tmp_path):
    fake = FakeCoreML()
    monkeypatch.setitem(sys.modules, "coremltools", fake)
    monkeypatch.setattr(coreml, "sys", SimpleNamespace(platform="darwin"))
    monkeypatch.setenv(coreml.CACHE, str(tmp_path))
    return fake


MAC = replace(CPU, backend=_MacCpu())


def _coreml_run(units: str, **options: object) -> Result:
    options = {"mode": "infer", "precision": "fp16", **options}
    return run_one(get_workload("mlp"), MAC, blocks=3, backend=units, **options)


def test_core_ml_times_the_load_apart_and_warms_up_before_timing(fake_coreml):
    result = _coreml_run("coreml-cpu-and-ne")
    assert result.status == "ok", result.error
    assert result.metrics[LOAD_S] >= FakeCoreML.LOAD_S
    facts = result.metrics["coreml"]
    assert facts["first_predictions_s"][0] >= FakeCoreML.COLD_S  # the cold start, kept apart
    assert max(result.measurement.samples) < FakeCoreML.COLD_S
    assert facts["compute_units"] == "CPU_AND_NE" and facts["compute_precision"] == "fp16"
    assert "convert FLOAT16" in fake_coreml.calls and "load CPU_AND_NE" in fake_coreml.calls


def test_core_ml_counts_the_compute_plan_operators_per_unit(fake_coreml):
    result = _coreml_run("coreml-all", precision="fp32")
    facts = Facts(result.metrics).get(CoreMLFacts)
    assert facts is not None and facts.operators == 4  # the constant is left out
    assert facts.per_unit == {"GPU": 2, "CPU": 1, "undetermined": 1}
    text = run_tables([result], width=400)
    assert "computed in fp32" in text
    assert "its 4 operators on: Neural Engine 0, GPU 2, CPU 1, undetermined 1" in text


def test_without_a_compute_plan_the_result_says_why(fake_coreml):
    del fake_coreml.models.compute_plan
    facts = Facts(_coreml_run("coreml-cpu-only").metrics).get(CoreMLFacts)
    assert facts is not None and facts.per_unit is None
    assert facts.plan_unavailable == "coremltools 9.0-fake has no compute plan"


def test_core_ml_compiles_once_per_model_and_loads_once_per_setting(fake_coreml):
    first, second = _coreml_run("coreml-all"), _coreml_run("coreml-cpu-and-gpu")
    assert fake_coreml.calls.count("compile") == 1
    assert [c for c in fake_coreml.calls if c.startswith("convert")] == ["convert FLOAT16"]
    assert "converted and compiled for this run" in first.metrics["coreml"]["compiled"]
    assert second.metrics["coreml"]["compiled"] == "compiled model from the cache"
    other = _coreml_run("coreml-all", batch_size=7)  # another batch is another model
    assert other.status == "ok" and fake_coreml.calls.count("compile") == 2


def test_core_ml_expands_to_one_row_per_compute_unit_setting():
    assert expand_backends(["coreml"], CPU) == [
        "coreml-all",
        "coreml-cpu-and-ne",
        "coreml-cpu-and-gpu",
        "coreml-cpu-only",
    ]


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"mode": "train"}, "Core ML is benchmarked for inference"),
        ({"precision": "bf16"}, "computes in fp16 or fp32, not bf16"),
    ],
)
def test_core_ml_says_what_it_cannot_run(fake_coreml, options, reason):
    result = _coreml_run("coreml-all", **options)
    assert result.status == "unsupported" and reason in result.error
    on_cpu = run_one(get_workload("mlp"), CPU, blocks=1, mode="infer", backend="coreml-all")
    assert "measured on the mps device, not cpu" in on_cpu.error


def test_off_macos_core_ml_is_stored_as_unsupported(cli, tmp_path):
    db = str(tmp_path / "r.db")
    args = ("mlp", "--devices", "cpu", "--modes", "infer", "--blocks", "1")
    done = cli("run", *args, "--backends", "coreml", "--json", "--quiet", "--db", db)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["results"]
    assert [r["spec"]["backend"] for r in rows] == [coreml.backend_name(u) for u in COMPUTE_UNITS]
    assert {r["status"] for r in rows} == {"unsupported"}
    assert all(r["error"].startswith("Core ML prediction needs macOS") for r in rows)
    assert "coreml" in cli("run", "--help").stdout


def test_the_cli_offers_every_core_ml_backend_and_no_other():
    from accelbench.core import vocab

    named = {b for b in vocab.BACKENDS if b.startswith("coreml")}
    assert named == {"coreml", *(coreml.backend_name(u) for u in COMPUTE_UNITS)}
    assert all(coreml.CoreML().owns(b) for b in named - {"coreml"})
