from dataclasses import replace

import torch

from accelbench.devices import resolve_devices
from accelbench.devices.cpu import CpuBackend
from accelbench.devices.power import PowerMeter
from accelbench.engine.runner import run_one
from accelbench.workloads import get_workload
from accelbench.workloads.seed import SeedMLP


class Exploding(SeedMLP):
    name = "exploding"

    def loss(self, outputs, targets):
        raise RuntimeError("kernel launch failed\nsecond line of detail")


class OutOfMemory(SeedMLP):
    name = "oom"

    def loss(self, outputs, targets):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80 GiB")


CPU = resolve_devices("cpu")[0]


def test_a_run_measures_and_fingerprints():
    result = run_one(get_workload("mlp"), CPU, blocks=6, warmup=2)
    assert result.status == "ok"
    assert len(result.measurement.samples) == 6 and len(result.measurement.warmup) == 2
    assert result.peak_memory and result.peak_memory > 0
    env = result.environment
    for key in ("host", "os", "cpu", "python", "torch", "accelbench", "device", "device_model"):
        assert env[key], key
    assert result.to_dict(label="x")["samples_per_s_median"] > 0


def test_failures_become_results_and_the_sweep_goes_on():
    results = [run_one(Exploding(), CPU, blocks=2), run_one(OutOfMemory(), CPU, blocks=2)]
    results.append(run_one(get_workload("mlp"), CPU, blocks=2))
    assert [r.status for r in results] == ["error", "oom", "ok"]
    assert results[0].error == "RuntimeError: kernel launch failed"
    assert results[0].measurement is None
    assert "out of memory" in results[1].error


def test_unsupported_options_are_results_with_the_reason():
    result = run_one(get_workload("mlp"), CPU, blocks=2, channels_last=True)
    assert result.status == "unsupported"
    assert "channels_last" in result.error and "not NCHW images" in result.error
    graphs = run_one(get_workload("seed-cnn"), CPU, blocks=2, cuda_graphs=True)
    assert graphs.status == "unsupported" and "cannot capture CUDA graphs" in graphs.error


def test_setup_time_is_kept_apart():
    result = run_one(get_workload("mlp"), CPU, blocks=3)
    assert result.metrics["setup_s"] > 0


class _StillCounter:
    """A power source whose energy counter never advanced (as NVML's can over short runs)."""

    name = "still"

    def available(self):
        return None

    def start(self):
        pass

    def stop(self):
        from accelbench.devices.power import PowerReading

        return PowerReading(
            average_watts=0.0, joules=0.0, seconds=0.05, samples=2, source="a still counter"
        )


class _StillCpu(CpuBackend):
    def power_meter(self, index):
        return PowerMeter(_StillCounter())


def test_a_counter_that_did_not_advance_leaves_the_measurement_standing():
    device = replace(CPU, backend=_StillCpu())
    result = run_one(get_workload("mlp"), device, blocks=3)
    assert result.status == "ok" and len(result.measurement.samples) == 3
    assert "read no energy" in result.metrics["power_unavailable"]
    assert "joules_per_sample" not in result.metrics
