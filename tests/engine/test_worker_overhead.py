"""What one isolated configuration costs beyond its timed seconds, and the fork server that
cuts it: the record of where the seconds went, the start method, a worker that dies, lever
plugins named after the server started, thread settings in a forked worker."""

import os
import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest

from accelbench.core.facts import Facts
from accelbench.devices import resolve_devices
from accelbench.engine import worker
from accelbench.engine.facts import OVERHEAD, Overhead
from accelbench.engine.measure import StopRule
from accelbench.engine.runner import make_spec
from accelbench.engine.worker import START, run_isolated, start_method
from accelbench.errors import UsageError
from accelbench.workloads import WorkloadRef, get_workload

CPU = resolve_devices("cpu")[0]
LINUX = sys.platform.startswith("linux")
FORKSERVER = pytest.mark.skipif(not LINUX, reason="the fork server is used on Linux only")

# A lever of the test's own that records, inside the worker, that it loaded and what torch's
# thread count was when the model was prepared (after the threads lever, whose stage is 0).
LATE_PLUGIN = textwrap.dedent(
    """
    import torch

    from accelbench.levers import Lever, register


    @register
    class LatePlugin(Lever):
        name = "late_plugin"
        option = "--late-plugin"
        help = "a plugin named after the fork server started"
        dimension = "late_plugin"
        default = ""
        words = ("off", "on")
        late = True

        def from_word(self, word):
            return "" if word == "off" else word

        def word(self, value):
            return value or "off"

        def label(self, value):
            return f"late:{value}"

        def apply_model(self, prep, value):
            prep.info["late_plugin"] = {"threads": torch.get_num_threads()}
    """
)


MLP = WorkloadRef("mlp")


def _run(spec=None, ref=MLP, probe=False):
    spec = spec or make_spec(get_workload("mlp"), CPU)
    return run_isolated(spec, ref, StopRule(blocks=3, warmup=1), 120, probe=probe)


def test_the_overhead_is_recorded_phase_by_phase():
    result = _run(probe=True)
    assert result.status == "ok", result.error
    seen = result.facts.get(Overhead)
    assert seen is not None and seen.setup_s == result.metrics["setup_s"]
    phases = [seen.start_s, seen.import_s, seen.setup_s, seen.warmup_s, seen.timed_s, seen.probe_s]
    assert all(x is not None and x >= 0 for x in phases), seen
    assert seen.drift_s is None  # not asked for, so not run
    assert seen.timed_s == pytest.approx(sum(result.measurement.samples))
    assert seen.warmup_s == pytest.approx(sum(result.measurement.warmup))
    assert seen.wall_s >= seen.timed_s and seen.beyond_timed_s >= 0
    assert sum(phases) <= seen.wall_s + 0.05  # the phases lie within the parent's wall time


def test_the_drift_check_is_timed_too():
    result = run_isolated(
        make_spec(get_workload("mlp"), CPU, mode="infer"),
        MLP,
        StopRule(blocks=3, warmup=1),
        120,
        probe=False,
        drift=True,
    )
    assert result.status == "ok", result.error
    assert result.facts.get(Overhead).drift_s > 0


def test_the_view_reads_and_adds():
    metrics = Overhead.add({"setup_s": 1.5}, start_s=0.25, timed_s=2.0)
    metrics = Overhead.add(metrics, wall_s=5.0)
    seen = Facts(metrics).get(Overhead)
    assert (seen.start_s, seen.setup_s, seen.timed_s, seen.wall_s) == (0.25, 1.5, 2.0, 5.0)
    assert seen.beyond_timed_s == 3.0 and seen.import_s is None
    assert Facts({}).get(Overhead) is None
    with pytest.raises(TypeError, match="setup_s"):
        Overhead.add(metrics, setup_s=1.0)  # it has its own key, written by the runner
    with pytest.raises(TypeError, match="wal_s"):
        Overhead.add(metrics, wal_s=1.0)


@FORKSERVER
def test_linux_forks_from_the_server_unless_spawn_is_asked_for(monkeypatch):
    monkeypatch.delenv(START, raising=False)
    assert start_method() == "forkserver"
    assert worker._context().get_start_method() == "forkserver"
    monkeypatch.setenv(START, "spawn")
    assert start_method() == "spawn"
    assert worker._context().get_start_method() == "spawn"
    monkeypatch.setenv(START, "fork")
    with pytest.raises(UsageError, match="forkserver, spawn"):
        start_method()


@FORKSERVER
def test_a_forked_worker_starts_without_importing_torch_again(monkeypatch):
    monkeypatch.delenv(START, raising=False)
    _run()  # the server may start during this one
    seen = _run().facts.get(Overhead)
    # against importing torch in a fresh interpreter now, on this host at its present load (a
    # bound in seconds fails on a loaded one: a forked start took 0.55 s beside 6 busy
    # processes): a worker that imported torch again would take all of it
    assert seen.start_s + seen.import_s < 0.5 * _torch_import_s(), seen


def _torch_import_s() -> float:
    """Seconds importing torch takes in a fresh interpreter here, now."""
    code = "import time; t = time.perf_counter(); import torch; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout)


@FORKSERVER
def test_what_the_server_preloads_starts_no_thread_and_no_device():
    # numpy's OpenBLAS pool is the one thread at import, and it is told to stay away here.
    code = textwrap.dedent(
        f"""
        import os, threading
        for name in {worker.PRELOAD!r}:
            __import__(name)
        import torch
        assert len(os.listdir("/proc/self/task")) == 1, os.listdir("/proc/self/task")
        assert threading.active_count() == 1, threading.enumerate()
        assert not torch.cuda.is_initialized()
        print("clean")
        """
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    env.pop("ACCELBENCH_LEVERS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "clean", out.stderr


@pytest.mark.parametrize("method", ["forkserver", "spawn"] if LINUX else ["spawn"])
def test_a_worker_that_dies_still_gives_an_error_result(tmp_path, monkeypatch, method):
    monkeypatch.setenv(START, method)
    model = tmp_path / "dying.py"
    model.write_text("import os\n\ndef make():\n    os._exit(3)\n")
    result = _run(ref=WorkloadRef(f"{model}:make"))
    assert result.status == "error"
    assert result.error == "the worker process died (exit code 3)"
    assert result.facts.get(Overhead).wall_s > 0
    assert OVERHEAD in result.metrics


def test_a_failure_in_the_worker_keeps_its_start_up_time(tmp_path):
    model = tmp_path / "raising.py"
    model.write_text("def make():\n    raise ValueError('no model today')\n")
    result = _run(ref=WorkloadRef(f"{model}:make"))
    assert result.status == "error" and "no model today" in result.error
    seen = result.facts.get(Overhead)
    assert seen.start_s >= 0 and seen.wall_s >= seen.start_s and seen.timed_s is None


def test_a_plugin_named_after_the_server_started_loads_in_the_worker(tmp_path, monkeypatch):
    worker._context()  # the server (on Linux) is running before the plugin is named
    plugin = tmp_path / "late_plugin_lever.py"
    plugin.write_text(LATE_PLUGIN)
    monkeypatch.setenv("ACCELBENCH_LEVERS", str(plugin))
    # The parent does not load it (it would stay registered for the other tests): the spec
    # names the lever directly, and only the worker needs to know it.
    spec = make_spec(get_workload("mlp"), CPU, threads=1)
    spec = replace(spec, levers=tuple(sorted((*spec.levers, ("late_plugin", "on")))))
    result = _run(spec=spec)
    assert result.status == "ok", result.error
    # and torch.set_num_threads took in the worker, whatever the server's torch held
    assert result.metrics["late_plugin"] == {"threads": 1}


_COMPILE_THREADS_SEEN = (
    "import os, torch._inductor.config as c\n"
    "from accelbench.engine.worker import compile_in_process\n"
    "compile_in_process()\n"
    "print(os.environ['TORCHINDUCTOR_COMPILE_THREADS'], c.compile_threads)\n"
)


@pytest.mark.parametrize(("asked", "seen"), [(None, "1 1"), ("3", "3 3")])
def test_a_worker_compiles_in_process_unless_the_user_names_a_count(asked, seen):
    """Inductor's compile pool outlives the compile and loads the host during the samples."""
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_COMPILE_THREADS"}
    if asked is not None:
        env["TORCHINDUCTOR_COMPILE_THREADS"] = asked
    out = subprocess.run(
        [sys.executable, "-c", _COMPILE_THREADS_SEEN], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == seen.split()


def test_a_worker_asked_for_a_rate_it_cannot_reach_stops_at_six_samples_and_says_so():
    """The optimization search's early stop, in a real worker: no CPU runs the mlp at 10^9
    blocks a second, so its process stops after the six samples an interval needs."""
    from accelbench.engine.facts import GAVE_UP_BELOW

    spec = make_spec(get_workload("mlp"), CPU, steps_per_block=1)
    rule = StopRule(max_time=30.0, min_samples=6, give_up_rate=1e9)
    result = run_isolated(spec, MLP, rule, 120, probe=False)
    assert result.status == "ok", result.error
    assert len(result.measurement.samples) == 6
    assert result.metrics[GAVE_UP_BELOW] == 1e9
    # a rate any CPU reaches: it times on, to the rule's own end
    result = run_isolated(spec, MLP, replace(rule, max_time=1.0, give_up_rate=1.0), 120)
    assert GAVE_UP_BELOW not in result.metrics and len(result.measurement.samples) >= 6
