"""The Mac paths (MPS and Core ML), which cannot run here: each is checked with fakes.

None of these tests executes MPS or Core ML; they show that the code calls the documented APIs
in the right order and reports what they return truthfully.
"""

from __future__ import annotations

import itertools
import time
import warnings
from dataclasses import replace

import pytest
import torch

import accelbench.devices.mps as mps
from accelbench.core.metrics import CPU_FALLBACK_OPS, Metrics
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.devices import HostTimer, resolve_devices
from accelbench.devices.base import DtypeSupport
from accelbench.devices.cpu import CpuBackend
from accelbench.devices.mps import MpsBackend, SampledPeak
from accelbench.engine.maxbatch import find_max_batch
from accelbench.engine.runner import run_one
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
    assert Metrics({CPU_FALLBACK_OPS: ["aten::a", "aten::b"]}).cpu_fallback_ops == (
        "aten::a",
        "aten::b",
    )
    with pytest.raises(ValueError, match="cpu_fallback_ops"):
        from accelbench.core.metrics import check_metrics

        check_metrics({CPU_FALLBACK_OPS: "aten::a"})
