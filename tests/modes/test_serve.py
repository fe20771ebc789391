"""Mode serve through the real command: LoadGen drives the seed's Linear in a worker, the
result is stored with LoadGen's verdict and summary, and bad options are one line, exit 2."""

from __future__ import annotations

import json
import os
import re

import pytest

from accelbench.backends.batch_choice import CANDIDATES
from tests.conftest import run_cli


def test_run_serves_a_model_and_stores_loadgens_verdict(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    db = str(tmp_path / "s.db")
    out = run_cli(
        "run", "mlp", "--devices", "cpu", "--modes", "serve", "--scenarios", "offline",
        "--max-batches", "8", "--batch-waits", "0.5", "--rounds", "2", "--quiet", "--db", db,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "serve fp32 offline p99<=10 mb8 w0.5" in out.stdout and " b100" not in out.stdout
    stored = json.loads(run_cli("results", "--db", db, "--json").stdout)
    (result,) = stored
    assert result["status"] == "ok" and result["spec"]["max_batch"] == 8
    served = result["metrics"]["serve"]
    # every process's LoadGen runs are kept, each with its process
    assert served["processes"] == 2 and [r["process"] for r in served["runs"]] == [0, 1]
    assert served["auto"] == [] and served["max_batches"] == [8, 8] and served["wait_ms"] == 0.5
    wall = next(line for line in out.stdout.splitlines() if "wall time" in line)
    assert "serving" in wall and "(2 LoadGen runs)" in wall, wall
    assert "timing" not in wall and "warm-up" not in wall, wall
    offline = served["runs"][0]
    assert offline["scenario"] == "offline" and offline["valid"] and offline["failed"] == []
    assert "Result is : VALID" in offline["summary"] and "Offline" in offline["summary"]
    assert max(int(size) for size in offline["batches"]) == 8
    assert served["figure"] == pytest.approx(offline["qps"])  # the first process's
    # the rate: the geometric mean of the two processes' figures
    both = [r["qps"] for r in served["runs"]]
    assert result["samples_per_s_median"] == pytest.approx((both[0] * both[1]) ** 0.5, rel=1e-6)


def test_auto_batching_is_chosen_from_the_bound_stored_and_shown(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    db = str(tmp_path / "s.db")
    out = run_cli(
        "run", "mlp", "--devices", "cpu", "--modes", "serve", "--scenarios", "offline",
        "--latency-bounds", "40", "--rounds", "1", "--quiet", "--db", db,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (result,) = json.loads(run_cli("results", "--db", db, "--json").stdout)
    assert result["spec"]["max_batch"] == "auto" and result["spec"]["batch_wait_ms"] == "auto"
    served = result["metrics"]["serve"]
    assert served["auto"] == ["max_batch", "batch_wait_ms"]
    assert served["wait_ms"] == pytest.approx(2.0)  # 40 ms / 20
    assert served["service_budget_ms"] == pytest.approx((40 - 2) / 2.5)
    timed = {int(size): ms for size, ms in served["service_ms"].items()}
    chosen = served["max_batch"]
    assert chosen in CANDIDATES and sorted(timed) == list(CANDIDATES[: len(timed)])
    # the largest within the budget: the next one timed (if any) was over it
    assert timed[chosen] <= served["service_budget_ms"] or chosen == 1
    assert all(ms > served["service_budget_ms"] for size, ms in timed.items() if size > chosen)
    (offline,) = served["runs"]
    assert max(int(size) for size in offline["batches"]) <= chosen
    assert f"served with batches of at most {chosen} (auto: " in out.stdout
    assert "a wait of 2 ms (auto: the bound / 20)" in out.stdout


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (
            ["--latency-bounds", "0"],
            "latency_bound_ms must be a number of milliseconds more than 0",
        ),
        (
            ["--latency-bounds", "-5"],
            "latency_bound_ms must be a number of milliseconds more than 0",
        ),
        (
            ["--latency-bounds", "nan"],
            "latency_bound_ms must be a number of milliseconds more than 0",
        ),
        (
            ["--latency-bounds", "inf"],
            "latency_bound_ms must be a number of milliseconds more than 0",
        ),
        (["--batch-waits", "-1"], "batch_wait_ms must be a number of milliseconds 0 or more"),
        (["--max-batches", "0"], "max_batch must be a whole number from 1"),
        (["--max-batches", "x"], "max_batch: 'x' is neither a whole number nor 'auto'"),
        (["--batch-waits", "soon"], "batch_wait_ms: 'soon' is not a number of milliseconds or"),
        (["--scenarios", "nope"], "valid: server, offline, singlestream, multistream"),
    ],
)
def test_bad_serve_options_are_one_line_and_exit_2(tmp_path, option, said):
    out = run_cli("run", "mlp", "--devices", "cpu", "--modes", "serve", *option,
                  "--db", str(tmp_path / "s.db"))  # fmt: skip
    assert out.returncode == 2
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr


def test_without_loadgen_run_says_which_extra_in_one_line(tmp_path):
    # a module that fails as a missing one does: the command must not get as far as a worker
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "mlperf_loadgen.py").write_text(
        'raise ModuleNotFoundError("No module named mlperf_loadgen", name="mlperf_loadgen")\n'
    )
    path = os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")])
    out = run_cli("run", "mlp", "--devices", "cpu", "--modes", "serve",
                  "--db", str(tmp_path / "s.db"), env={"PYTHONPATH": path})  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "accelbench: error: mlcommons-loadgen is needed for serving under load: "
        "pip install 'accelbench[serve]'"
    )


def test_a_served_configuration_s_label_has_no_closed_loop_batch():
    from accelbench.core.result import RunSpec
    from accelbench.levers.registry import label

    args = (("latency_bound_ms", 10.0), ("max_batch", "auto"), ("scenario", "server"))
    served = RunSpec(workload="mlp", device="cpu", batch_size=100, steps_per_block=1,
                     mode="serve", mode_args=args)  # fmt: skip
    assert label(served) == "serve fp32 server p99<=10 mb=auto"
    inferred = RunSpec(workload="mlp", device="cpu", batch_size=100, steps_per_block=1,
                       mode="infer")  # fmt: skip
    assert label(inferred) == "infer fp32 b100"


def test_multistream_answers_groups_of_8_and_its_figure_is_8_over_the_p99(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    db = str(tmp_path / "s.db")
    out = run_cli(
        "run", "mlp", "--devices", "cpu", "--modes", "serve", "--scenarios", "multistream",
        "--max-batches", "16", "--batch-waits", "0.5", "--rounds", "1", "--quiet", "--db", db,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    (result,) = json.loads(run_cli("results", "--db", db, "--json").stdout)
    served = result["metrics"]["serve"]
    (run,) = served["runs"]
    assert run["scenario"] == "multistream" and run["valid"], run["summary"]
    assert "Multi Stream" in run["summary"] or "MultiStream" in run["summary"]
    assert set(run["batches"]) == {"8"}  # each group is one batch: the next waits for it
    assert run["samples"] == 8 * sum(run["batches"].values())
    assert served["figure"] == pytest.approx(8 / (run["p99_ms"] / 1e3), rel=1e-6)


def test_a_bound_no_load_can_meet_ends_the_configuration_with_one_line_saying_so(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    db = str(tmp_path / "s.db")
    out = run_cli(
        "run", "mlp", "--devices", "cpu", "--modes", "serve", "--latency-bounds", "0.001",
        "--max-batches", "8", "--rounds", "1", "--quiet", "--db", db, timeout=300,
    )  # fmt: skip
    assert "Traceback" not in out.stderr
    (result,) = json.loads(run_cli("results", "--db", db, "--json").stdout)
    assert result["status"] != "ok"
    assert re.fullmatch(
        r".*even one request at a time takes [0-9.e+-]+ ms at p99; the bound is 0\.001 ms",
        result["error"],
    ), result["error"]
    assert "the bound is 0.001 ms" in out.stdout + out.stderr
    runs = result["metrics"]["serve"]["runs"]  # what was measured is kept: no Server search
    assert [r["scenario"] for r in runs] == ["singlestream", "offline"]
    assert result["metrics"]["serve"]["server_qps"] is None


def test_explain_of_a_served_configuration_does_not_set_the_profile_against_a_step_time(
    tmp_path,
):
    """Serving's figure is a rate under load, not a step time: the profiled step (one batch of
    the largest size) is described on its own, never as a share of a 'measured median'."""
    pytest.importorskip("mlperf_loadgen")
    out = run_cli(
        "explain", "mlp", "--device", "cpu", "--mode", "serve", "--scenario", "offline",
        "--max-batch", "8", "--batch-wait", "0.5", "--rounds", "1", "--db",
        str(tmp_path / "e.db"),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "profiled " in out.stdout and "a step" in out.stdout, out.stdout
    assert "measured median" not in out.stdout, out.stdout
    assert "the profiled step is one batch of 8" in out.stdout, out.stdout
    # --rounds 1 is one process, as in `run` (explain used to leave it out of its request)
    wall = next(line for line in out.stdout.splitlines() if line.startswith("all: wall time"))
    assert " over " not in wall and "LoadGen run" in wall, wall
