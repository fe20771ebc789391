"""Data-parallel training over torch.distributed: a real 2-process gloo job on the CPU."""

import json
import os
import textwrap
import uuid
from pathlib import Path

import pytest

from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.levers import spec_with
from accelbench.workflows.benchmark import _with_scaling
from tests.conftest import run_cli

SPEC = RunSpec("mlp", "cpu", 100, 1)


def _made(processes, seconds):
    return Result(
        spec=spec_with(SPEC, processes=processes),
        status="ok",
        measurement=Measurement((seconds,) * 6),
    )


def test_scaling_efficiency_arithmetic():
    single = _made(1, 0.01)  # 100 it/s x 100 samples = 10,000 samples/s
    double = _made(2, 0.0125)  # 80 it/s x 100 samples x 2 processes = 16,000 samples/s
    assert double.samples_per_second == pytest.approx(16_000)
    scaled = _with_scaling(double, {single.spec: single})
    assert scaled.metrics["scaling_efficiency"] == pytest.approx(16_000 / (2 * 10_000))
    assert scaled.metrics["single_process_samples_per_s"] == pytest.approx(10_000)
    alone = _with_scaling(double, {})
    assert "missing" in alone.metrics["scaling_unavailable"]


def _leftovers(marker):
    """Processes still carrying the marker in their environment (root can read them all)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(entry.name)
        except OSError:
            continue
    return found


def _cli(*args):
    marker = uuid.uuid4().hex
    out = run_cli(*args, env={"ACCELBENCH_TEST_MARKER": marker})
    return out, marker


def test_two_gloo_processes_train_and_aggregate(tmp_path):
    out, marker = _cli(
        "run",
        "mlp",
        "--devices",
        "cpu",
        "--nproc-per-node",
        "2",
        "--blocks",
        "2",  # one it in each of two processes, each launching both ranks
        "--no-verdict",
        "--json",
        "--db",
        str(tmp_path / "r.db"),
    )
    assert out.returncode == 0, out.stderr
    single, double = json.loads(out.stdout)["results"]
    assert (single["spec"]["processes"], double["spec"]["processes"]) == (1, 2)
    metrics = double["metrics"]
    assert metrics["world_size"] == 2 and [r["rank"] for r in metrics["ranks"]] == [0, 1]
    assert all(len(r["samples_s"]) == 2 for r in metrics["ranks"])  # both processes' its
    # an it processes both ranks' batches
    assert double["samples_per_s_median"] == pytest.approx(double["it_per_s"]["median"] * 200)
    assert metrics["scaling_efficiency"] == pytest.approx(
        double["samples_per_s_median"] / (2 * single["samples_per_s_median"])
    )
    assert _leftovers(marker) == []


FAILING = textwrap.dedent(
    """
    import os
    import time

    import torch
    from torch import nn

    from accelbench.workloads import Workload


    class RankTrouble(Workload):
        name = "rank-trouble"
        batch_size = 4
        input_shape = (4,)
        num_classes = 2

        def build_model(self):
            return nn.Linear(4, 2)

        def make_batch(self, generator, batch_size):
            return torch.randn(batch_size, 4, generator=generator), torch.zeros(batch_size).long()

        def forward(self, model, inputs):
            if os.environ.get("RANK") == "1":
                if os.environ.get("TROUBLE") == "hang":
                    time.sleep(600)
                raise RuntimeError("rank one broke")
            return model(inputs)


    def make():
        return RankTrouble()
    """
)


@pytest.mark.parametrize(
    "trouble, status, message, timeout",
    [
        # the raise ends it at once: a long limit costs nothing and holds the ranks' start
        # (each spawned, importing torch) on a loaded host
        ("raise", "error", "rank 1 failed", "120"),
        # what the hang waits for: ample for the ranks' start (spawned, importing torch) and
        # the single process, and the same for the ranks' process group, whose clock starts later
        ("hang", "timeout", "no result within --timeout", "25"),
    ],
)
def test_a_failing_or_hanging_rank_ends_the_run_and_leaves_no_process(
    tmp_path, trouble, status, message, timeout
):
    model = tmp_path / "trouble.py"
    model.write_text(FAILING)
    marker = uuid.uuid4().hex
    out = run_cli(
        "run",
        "--model",
        f"{model}:make",
        "--devices",
        "cpu",
        "--nproc-per-node",
        "2",
        "--blocks",
        "2",
        "--no-verdict",
        "--timeout",
        timeout,
        "--json",
        "--db",
        str(tmp_path / "r.db"),
        env={"ACCELBENCH_TEST_MARKER": marker, "TROUBLE": trouble},
    )
    assert out.returncode == 1, out.stderr
    single, double = json.loads(out.stdout)["results"]
    assert single["status"] == "ok"  # rank 1's trouble needs a second rank
    assert double["status"] == status and message in double["error"]
    assert _leftovers(marker) == []


def test_inference_is_not_data_parallel(tmp_path):
    out = run_cli(
        "run",
        "mlp",
        "--devices",
        "cpu",
        "--modes",
        "infer",
        "--nproc-per-node",
        "2",
        "--blocks",
        "2",
        "--no-verdict",
        *("--rounds", "1", "--no-latency"),  # the single process's row is not under test
        "--json",
        "--db",
        str(tmp_path / "r.db"),
    )
    results = json.loads(out.stdout)["results"]
    assert results[1]["status"] == "unsupported"
    assert "applies to training only" in results[1]["error"]


def test_bad_multi_node_options(tmp_path):
    out = run_cli("run", "--nnodes", "2", "--db", str(tmp_path / "r.db"))
    assert out.returncode == 2 and "needs --rdzv-endpoint" in out.stderr
