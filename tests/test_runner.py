import torch

from accelbench.devices import resolve_devices
from accelbench.runner import run_one, run_sweep
from accelbench.workloads import get_workload
from accelbench.workloads.seed import SeedMLP


class Exploding(SeedMLP):
    name = "exploding"

    def train_step(self, model, optimizer, batch):
        raise RuntimeError("kernel launch failed\nsecond line of detail")


class OutOfMemory(SeedMLP):
    name = "oom"

    def train_step(self, model, optimizer, batch):
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
    assert result.to_dict()["samples_per_s_median"] > 0


def test_failures_become_results_and_the_sweep_goes_on():
    results = [run_one(Exploding(), CPU, blocks=2), run_one(OutOfMemory(), CPU, blocks=2)]
    results += run_sweep(get_workload("mlp"), [CPU], blocks=2)
    assert [r.status for r in results] == ["error", "oom", "ok"]
    assert results[0].error == "RuntimeError: kernel launch failed"
    assert results[0].measurement is None
    assert "out of memory" in results[1].error


def test_sweep_hands_each_result_to_on_result_as_it_lands():
    landed = []
    results = run_sweep(
        get_workload("mlp"), [CPU], blocks=2, on_result=lambda r: landed.append(r) or r
    )
    assert landed == results
