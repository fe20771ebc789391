"""The library plans as the CLI does: `accelbench.benchmark`, the typed requests that `run` and
`optimize` build, and the levers' values handed to the sweep."""

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

import accelbench
from accelbench.cli import optimize, run
from accelbench.cli.main import build_parser
from accelbench.engine.sweep import Sweep
from accelbench.errors import UsageError
from accelbench.levers import all_levers, find_lever
from accelbench.workflows.benchmark import BenchmarkRequest, plan
from accelbench.workflows.optimize_plan import OptimizeRequest, plan_ladder
from accelbench.workloads import WorkloadRef
from tests.conftest import run_cli

WORKFLOWS = Path(accelbench.__file__).parent / "workflows"


def _run_request(*argv: str) -> BenchmarkRequest:
    return run.request_from(build_parser().parse_args(["run", *argv]))


def test_benchmark_measures_seed_cnn_on_the_cpu_as_run_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACCELBENCH_DB", raising=False)
    request = BenchmarkRequest(
        workloads=(WorkloadRef("seed-cnn"),), devices="cpu", batch_sizes=(8,), epochs=2,
        verdict=False,
    )  # fmt: skip
    results = accelbench.benchmark(request)
    (result,) = results
    assert result.status == "ok", result.error
    assert (result.spec.workload, result.spec.device, result.spec.batch_size) == (
        "seed-cnn",
        "cpu",
        8,
    )
    assert len(result.measurement.samples) == 2 and result.samples_per_second > 0
    assert result.id == 1 and result.environment["device"] == "cpu"
    # the sweep `accelbench run` plans from the same options: the same key, so --resume agrees;
    # each run its own id under it
    cli = plan(_run_request("seed-cnn", "--devices", "cpu", "--batch-sizes", "8", "--blocks", "2"))
    assert result.sweep.startswith(f"{cli.sweep.id}-") and result.sweep != cli.id
    assert list(tmp_path.iterdir()) == []  # without db nothing is stored, not even ./accelbench.db


def test_benchmark_runs_each_configuration_in_a_worker_and_stores_it(tmp_path):
    db = tmp_path / "r.db"
    # A limit no spawned worker can meet: the worker is stopped and that is the Result.
    request = BenchmarkRequest(
        workloads=(WorkloadRef("mlp"),), devices="cpu", epochs=1, timeout=0.01
    )
    (result,) = accelbench.benchmark(request, db=db)
    assert result.status == "timeout" and "the worker was stopped" in result.error
    with accelbench.Store(db) as store:
        assert [r.id for r in store.results()] == [result.id]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"modes": ("eval",)}, "modes: invalid value 'eval'; valid: train, infer"),
        ({"backends": ("tvm",)}, "backends: invalid value 'tvm'; valid: torch, onnxruntime,"),
    ],
)
def test_benchmark_refuses_unknown_words_before_running(options, message):
    request = BenchmarkRequest(workloads=(WorkloadRef("mlp"),), devices="cpu", **options)
    with pytest.raises(UsageError, match=message):
        accelbench.benchmark(request)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"levers": {"precision": ("fp8",)}}, "precision: invalid value 'fp8'; valid: fp32, tf32"),
        (
            {"levers": {"warp": (1,)}},
            "unknown lever 'warp'; valid: precision, channels_last, attention, kv_cache, compile,",
        ),
        ({"batch_sizes": (8, 0)}, "batch_sizes must be a whole number from 1 to 1,000,000,000"),
        (
            {"modes": ("generate",), "mode_args": {"new_tokens": (True,)}},
            "new_tokens must be a whole number from 1 to 1,000,000,000, not True",
        ),
        (
            {"mode_args": {"new_tokens": (4,)}},
            "--new-tokens applies to --modes generate or serve only",
        ),
        ({"mode_args": {"warp": (4,)}}, "no mode has an option 'warp'; valid: batch_wait_ms,"),
        ({"epochs": 0}, "epochs must be a whole number from 1 to 1,000,000,000, not 0"),
        ({"rounds": 10**10}, "rounds must be a whole number from 1 to 1,000,000,000, not 1000"),
        ({"warmup": -1}, "warmup must be a whole number from 0 to 1,000,000,000, not -1"),
        ({"timeout": 0}, "timeout must be a number of seconds above 0 and at most 604,800"),
        ({"max_time": float("inf")}, "max_time must be a number of seconds above 0 and at most"),
        ({"max_time": float("nan")}, "max_time must be a number of seconds above 0 and at most"),
        ({"timeout": 10**6}, "timeout must be a number of seconds above 0 and at most 604,800"),
        ({"timeout": True}, "timeout must be a number of seconds above 0 and at most 604,800"),
        ({"rounds": 2, "max_rounds": 4}, "--rounds 2 fixes the count; --max-rounds 4 caps"),
        ({"max_batch": True, "batch_sizes": (8,)}, "--max-batch searches the batch size"),
        ({"nodes": 2}, "--nnodes above 1 needs --rdzv-endpoint HOST:PORT"),
        ({"workloads": (3,)}, "workloads takes a workload name (such as 'seed-cnn' or"),
        ({"modes": 3}, "modes takes a name, comma-separated names or a sequence of names, not 3"),
        ({"backends": 3}, "backends takes a name, comma-separated names or a sequence of names"),
        ({"levers": ("precision",)}, "levers takes a mapping of lever name to values, not"),
    ],
)
def test_a_benchmark_request_checks_itself_as_it_is_made(options, message):
    with pytest.raises(UsageError, match=re.escape(message)) as caught:
        BenchmarkRequest(devices="cpu", **options)
    assert "\n" not in str(caught.value)


def test_benchmark_takes_a_request_and_says_so_when_given_a_name():
    with pytest.raises(UsageError, match="benchmark takes a BenchmarkRequest, not str"):
        accelbench.benchmark("mlp")  # type: ignore[arg-type]


def test_lever_values_are_every_levers_with_its_defaults():
    request = _run_request("mlp", "--devices", "cpu")
    assert list(request.levers) == [lever.name for lever in all_levers() if lever.option]
    # options left at their defaults are the Sweep's defaults, so old sweep ids still match
    assert plan(request).sweep.id == Sweep(workloads=(WorkloadRef("mlp"),), devices=("cpu",)).id
    compiled = _run_request(
        "mlp", "--compile", "off,max-autotune", "--memory-formats", "channels_last"
    )
    assert compiled.levers["compile"] == ("", "max-autotune")
    assert compiled.levers["channels_last"] == (True,)


def test_data_parallel_world_sizes_count_every_node_and_always_one():
    request = _run_request(
        "mlp", "--devices", "cpu", "--nproc-per-node", "3,2", "--nnodes", "2",
        "--rdzv-endpoint", "host:29500",
    )  # fmt: skip
    planned = plan(request)
    assert planned.sweep.values_of(find_lever("processes")) == (1, 4, 6)
    assert (planned.launch.nodes, planned.launch.endpoint) == (2, "host:29500")
    with pytest.raises(UsageError, match="--nnodes above 1 needs --rdzv-endpoint"):
        BenchmarkRequest(workloads=(WorkloadRef("mlp"),), devices="cpu", nodes=2)


def test_optimize_plans_its_ladder_from_a_request():
    args = build_parser().parse_args(
        ["optimize", "mlp", "--device", "cpu", "--levers", "compile", "--blocks", "2",
         "--tolerance", "0.1", "--min-top1", "90%", "--logit-tolerance", "0.3"]
    )  # fmt: skip
    request = optimize.request_from(args)
    assert request == OptimizeRequest(
        workload=WorkloadRef("mlp"),
        device="cpu",
        levers=("compile",),
        epochs=2,
        tolerance=request.tolerance,
    )
    assert (request.tolerance.max_rel_error, request.tolerance.min_top1) == (0.1, 0.9)
    assert request.tolerance.max_spread_error == 0.3
    ladder = plan_ladder(request)
    assert ladder.groups == ("compile",) and ladder.base.workload == "mlp"
    assert ladder.stop.blocks == 2 and ladder.device.name == "cpu" and ladder.budget == 300


def test_no_workflow_takes_parsed_command_line_options():
    for path in WORKFLOWS.glob("*.py"):
        text = path.read_text()
        assert "argparse" not in text and "from ..cli" not in text, path.name


BROKEN_ANALYSIS = textwrap.dedent(
    """
    from accelbench.analysis.metrics import Analyzer


    def _fail(self, *args, **kwargs):
        raise RuntimeError("the analysis broke")


    Analyzer.__call__ = _fail
    """
)


def test_a_measurement_whose_analysis_fails_is_stored_with_a_caveat(tmp_path):
    """Store first: what fails after the samples (here the analysis in the command) is said
    with the result, never a lost configuration and a traceback."""
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "sitecustomize.py").write_text(BROKEN_ANALYSIS)
    path = os.pathsep.join([str(tmp_path / "broken"), os.environ.get("PYTHONPATH", "")])
    db = tmp_path / "r.db"
    args = ["mlp", "--blocks", "4", "--rounds", "1", "--no-verdict", "--db", str(db)]
    out = run_cli("run", *args, env={"PYTHONPATH": path})
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    stored = json.loads(run_cli("results", "--json", "--db", str(db)).stdout)
    assert [r["status"] for r in stored] == ["ok"] and len(stored[0]["samples_s"]) == 4
    caveats = " ".join(c["text"] for c in stored[0]["caveats"])
    assert "the analysis after the measurement failed (RuntimeError: the analysis broke)" in caveats


def test_quick_plans_two_processes_one_second_one_step_an_it_and_no_probe():
    checked = plan(_run_request("seed-cnn", "--devices", "cpu", "--quick"))
    (config,) = checked.configs
    assert config.spec.steps_per_block == 1 and config.stop.max_time == 1.0
    assert config.stop.blocks is None  # seed-cnn's 100 its give way to the 1 s budget
    assert checked.policy.fixed == 2 and not checked.verdict and not checked.latency
    assert checked.quick.startswith("quick (--quick): 2 processes, 1 s of timing in all")
    # the user's own counts and seconds win; what quick cut still says so
    own = plan(_run_request("mlp", "--devices", "cpu", "--quick", "--blocks", "6", "--rounds", "3"))
    assert own.policy.fixed == 3 and own.configs[0].stop.blocks == 6
    assert own.quick.startswith("quick (--quick): 3 processes, 6 timed its,")
    # a full run's sweep key is what it was: quick's one step an it is a sweep of its own
    full = plan(_run_request("seed-cnn", "--devices", "cpu"))
    assert full.quick == "" and full.configs[0].spec.steps_per_block == 20
    assert full.sweep.id == Sweep(workloads=(WorkloadRef("seed-cnn"),), devices=("cpu",)).id


def test_quick_run_stores_and_prints_its_caveat_and_where_the_wall_time_went(tmp_path):
    db = str(tmp_path / "r.db")
    out = run_cli("run", "mlp", "--devices", "cpu", "--quick", "--json", "--db", db)
    assert out.returncode == 0, out.stderr
    (result,) = json.loads(out.stdout)["results"]
    assert result["processes"] == 2 and result["spec"]["steps_per_block"] == 1
    assert "probe" not in result["metrics"] and "latency" not in result["metrics"]
    quick = [c for c in result["caveats"] if c["kind"] == "quick"]
    assert len(quick) == 1 and quick[0]["text"].startswith("quick (--quick): 2 processes")
    overhead = result["metrics"]["overhead"]
    assert overhead["timed_s"] > 0 and overhead["wall_s"] >= overhead["timed_s"]
    (stored,) = json.loads(run_cli("results", "--json", "--db", db).stdout)  # read back
    assert [c for c in stored["caveats"] if c["kind"] == "quick"] == quick
    table = run_cli("run", "mlp", "--devices", "cpu", "--quick", "--db", db).stdout
    assert "quick (--quick): 2 processes, 1 s of timing in all, 1 step an it" in table
    assert re.search(r"wall time [\d.]+ s over 2 processes: start [\d.]+ s, .*timing", table)
