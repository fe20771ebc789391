"""The user's model ends only its own configuration: a forward that exits, crashes or hangs runs
in the worker, under the time limit; a CLI that is terminated or killed leaves no process
behind (the process table is read); and the small ones of the same battery: a closed pipe,
ids, duplicate workload names, a CPU allocation failure, the clock of --timeout, export --out."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types
import uuid
from pathlib import Path

import pytest
import torch
from torch import nn

from accelbench.core.result import Result
from accelbench.devices import is_out_of_memory, resolve_devices
from accelbench.engine import worker
from accelbench.engine.facts import Overhead
from accelbench.engine.measure import StopRule
from accelbench.engine.runner import make_spec, run_config
from accelbench.errors import UsageError, WorkloadError
from accelbench.exporters import export_model
from accelbench.store.db import Store
from accelbench.workloads import Workload, WorkloadRef, get_workload
from accelbench.workloads.custom import ModelOptions, load_custom
from tests.conftest import REPO, run_cli

LINUX = sys.platform.startswith("linux")
ON_LINUX = pytest.mark.skipif(not LINUX, reason="reads /proc")
CPU = resolve_devices("cpu")[0]

# Each worker's first forward (the shape check) takes the next of these turns, counted in a file
# beside the model: the first exits, the second segfaults, the third hangs; the sweep must go on.
HOSTILE = textwrap.dedent(
    """
    import ctypes, os, time
    from pathlib import Path
    from torch import nn

    TURNS = Path(__file__).with_suffix(".turns")


    class Hostile(nn.Module):
        def forward(self, x):
            turn = int(TURNS.read_text()) if TURNS.exists() else 0
            TURNS.write_text(str(turn + 1))
            if turn == 0:
                os._exit(1)
            if turn == 1:
                ctypes.string_at(0)
            time.sleep(600)
            return x


    def make():
        return nn.Sequential(nn.Linear(4, 2), Hostile())
    """
)

# A workload whose forward says it started (a file), then sleeps or returns quickly, for the
# kill tests. A Workload, not a bare nn.Module, so that its forward runs in the worker only.
STARTED = textwrap.dedent(
    """
    import os, time
    from pathlib import Path

    import torch
    from torch import nn

    from accelbench.workloads import Workload


    class Marked(nn.Linear):
        def forward(self, x):
            Path(os.environ["STARTED_FILE"]).touch()
            time.sleep(float(os.environ["FORWARD_SLEEP_S"]))
            return super().forward(x)


    class Steps(Workload):
        name = "marked"
        input_shape = (4,)

        def build_model(self):
            return Marked(4, 2)

        def make_batch(self, generator, batch_size):
            return torch.randn(batch_size, 4, generator=generator), torch.randn(batch_size, 2)

        def loss(self, outputs, targets):
            return nn.functional.mse_loss(outputs, targets)


    def make():
        return Steps()
    """
)
MODULE = ("--input-shape", "4", "--loss", "mse", "--devices", "cpu", "--no-verdict")


def _model(tmp_path: Path, source: str) -> str:
    path = tmp_path / "model.py"
    path.write_text(source)
    return f"{path}:make"


def test_a_forward_that_exits_crashes_or_hangs_ends_only_its_configuration(tmp_path):
    db = tmp_path / "r.db"
    began = time.monotonic()
    out = run_cli(
        *("run", "--model", _model(tmp_path, HOSTILE), *MODULE, "--batch-sizes", "1,2,3"),
        *("--blocks", "1", "--timeout", "5", "--db", str(db)),
        timeout=400,
    )
    # the hang sleeps 600 s; the command took 30 s beside six busy processes (each worker's
    # start and the fork server's torch import slow with the load): a bound of 60 s was close
    assert time.monotonic() - began < 300, "the hanging forward was waited for"
    assert out.returncode == 1, out.stderr  # failed configurations, as docs/commands/run.md says
    assert "killed by SIGSEGV" in out.stdout and "exit code 1" in out.stdout
    with Store(db) as store:
        stored = sorted(store.results(), key=lambda r: r.spec.batch_size)
    assert [r.status for r in stored] == ["error", "error", "timeout"]
    assert stored[0].error == "the worker process died (exit code 1)"
    assert stored[1].error == "the worker process died (killed by SIGSEGV)"
    assert "no result within --timeout 5 s" in (stored[2].error or "")


def test_a_bad_shape_is_the_configurations_error_in_one_line(tmp_path):
    path = tmp_path / "tiny.py"
    path.write_text("from torch import nn\n\ndef make():\n    return nn.Linear(4, 3)\n")
    workload = load_custom(f"{path}:make", ModelOptions(input_shape=(5,), num_classes=3))
    spec = make_spec(workload, CPU)
    result = run_config(spec, workload, CPU, StopRule(blocks=1), probe=False)
    assert result.status == "error"
    assert "rejects inputs of shape 2x5: RuntimeError" in (result.error or "")


@pytest.mark.parametrize(
    "returned, said",
    [
        ("None", "returned None: it must return its output, a tensor"),
        ("{'a': x, 'b': x}", "returned a dict holding a, b: which is the output?"),
        ("('no tensor',)", "returned a tuple holding no tensor: it must return one"),
    ],
)
def test_a_forward_that_returns_no_one_tensor_is_named_in_one_line(tmp_path, returned, said):
    path = tmp_path / "none.py"
    path.write_text(
        "from torch import nn\n\n"
        "class Nothing(nn.Module):\n"
        f"    def forward(self, x):\n        return {returned}\n\n"
        "def make():\n    return Nothing()\n"
    )
    workload = load_custom(f"{path}:make", ModelOptions(input_shape=(4,), loss="mse"))
    with pytest.raises(WorkloadError) as caught:
        workload.check()
    message = str(caught.value)
    assert message.startswith(f"{path}:make: its forward ") and said in message
    assert "\n" not in message


def _ours(mark: str) -> list[int]:
    """Processes started with `mark` in their environment: the CLI and all it started."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):  # gone meanwhile, or not ours to read
                if mark.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
    return found


def _survivors(mark: str, within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    while (left := _ours(mark)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@ON_LINUX
@pytest.mark.alone  # signals and a hanging forward: timing-sensitive beside other tests
@pytest.mark.parametrize(
    "sent, forward_s",
    [(signal.SIGTERM, 600), (signal.SIGHUP, 600), (signal.SIGKILL, 600), (signal.SIGKILL, 0.01)],
    ids=["term-hanging", "hup-hanging", "kill-hanging", "kill-stepping"],
)
def test_a_terminated_or_killed_cli_leaves_no_process_behind(tmp_path, sent, forward_s):
    command = ["run", "--model", _model(tmp_path, STARTED), "--devices", "cpu", "--no-verdict"]
    code, stderr = _signalled(tmp_path, command + ["--blocks", "100000"], sent, forward_s)
    if sent == signal.SIGTERM:
        assert code == 143 and "terminated; results already stored are kept" in stderr
    if sent == signal.SIGHUP:  # the terminal closed: said as SIGTERM is
        assert code == 129 and "hung up (SIGHUP); results already stored are kept" in stderr


@ON_LINUX
@pytest.mark.parametrize("sent", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
def test_optimize_ends_when_its_terminal_signals_its_whole_process_group(tmp_path, sent):
    # A closed terminal (or Ctrl-C) signals the foreground group: the command, the fork server,
    # the resource tracker and any worker in it, all at once, not the command alone.
    command = ["optimize", "--model", _model(tmp_path, STARTED), "--device", "cpu"]
    command += ["--mode", "infer", "--budget", "600"]
    code, stderr = _signalled(tmp_path, command, sent, 600, group=True)
    assert code == 128 + sent, stderr
    assert "results already stored are kept" in stderr and "leaked" not in stderr, stderr


def _signalled(
    tmp_path: Path, args: list[str], sent: int, forward_s: float, group: bool = False
) -> tuple[int, str]:
    """Start the CLI, send `sent` once the model's forward runs, and return its exit code and
    stderr, asserting that nothing it started is left running and nothing is a traceback."""
    mark = f"ACCELBENCH_TEST_MARK_{uuid.uuid4().hex}"
    started = tmp_path / "started"
    env = {**os.environ, mark: "1", "STARTED_FILE": str(started), "FORWARD_SLEEP_S": str(forward_s)}
    env.pop("ACCELBENCH_DB", None)
    command = [sys.executable, "-m", "accelbench", *args, "--db", str(tmp_path / "r.db")]
    # Files, not pipes: a survivor holding a pipe open would hang the test instead of failing it.
    with (tmp_path / "err").open("w") as err:
        cli = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=group
        )
        try:
            deadline = time.monotonic() + 120
            while not started.exists() and cli.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            assert started.exists(), (tmp_path / "err").read_text()
            time.sleep(0.5)  # into the forward's sleep, or well into the timed steps
            (os.killpg if group else os.kill)(cli.pid, sent)
            code = cli.wait(timeout=30)
        finally:
            left = _survivors(mark)
            for pid in left:  # the test's own clean-up, so a failure leaves nothing running
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert left == [], f"still running: {left}"
    stderr = (tmp_path / "err").read_text()
    assert "Traceback" not in stderr, stderr
    return code, stderr


def test_a_closed_pipe_ends_the_command_quietly(tmp_path):
    db = tmp_path / "r.db"
    shutil.copy(REPO / "tests" / "data" / "schema6.db", db)
    reader = subprocess.Popen(
        [sys.executable, "-m", "accelbench", "results", "--json", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()  # like `| head -c 0`: whatever it writes finds no reader
    code = reader.wait(timeout=120)
    assert (code, reader.stderr.read().decode()) == (141, "")


def test_a_worker_whose_parent_is_gone_ends_without_a_traceback():
    # In a child of its own, since the worker ends its whole process group.
    code = textwrap.dedent(
        """
        import multiprocessing, os
        from accelbench.engine import worker
        os.setsid()
        receiver, sender = multiprocessing.Pipe(duplex=False)
        receiver.close()
        worker._send(sender, ("block", 1, 0.5))
        print("survived")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout, out.stderr) == (-signal.SIGKILL, "", "")


def test_the_timeout_starts_when_the_worker_is_ready():
    receiver, sender = worker.multiprocessing.Pipe(duplex=False)
    result = Result(spec=make_spec(get_workload("mlp"), CPU), status="ok")

    def slow_start() -> None:
        time.sleep(1.5)  # a start-up longer than the configuration's time limit
        sender.send(("ready",))
        time.sleep(0.1)  # well within the limit, however late a loaded host wakes this thread
        sender.send(("result", result))

    threading.Thread(target=slow_start, daemon=True).start()
    alive = type("Alive", (), {"is_alive": lambda self: True})()
    assert worker._wait(receiver, alive, 1.0, None) == worker._Sent(result)


def test_a_result_that_arrived_while_the_command_was_stopped_is_kept(monkeypatch):
    """SIGSTOP the command past the deadline, then continue it: the worker had finished in
    time and its result waits in the pipe, so it is the result, not a timeout."""
    receiver, sender = worker.multiprocessing.Pipe(duplex=False)
    result = Result(spec=make_spec(get_workload("mlp"), CPU), status="ok")
    sender.send(("ready",))
    sender.send(("result", result))
    readings = iter([0.0] + [1e6] * 10)  # every look at the clock after the first is too late
    monkeypatch.setattr(worker, "time", types.SimpleNamespace(monotonic=lambda: next(readings)))
    alive = type("Alive", (), {"is_alive": lambda self: True})()
    assert worker._wait(receiver, alive, 1.0, None) == worker._Sent(result)
    receiver, _ = worker.multiprocessing.Pipe(duplex=False)  # nothing sent: a timeout still
    readings = iter([0.0] + [1e6] * 10)
    assert worker._wait(receiver, alive, 1.0, None) == "not started"


def test_a_worker_that_never_gets_ready_has_a_start_up_limit(monkeypatch):
    monkeypatch.setattr(worker, "START_LIMIT_S", 0.3)
    receiver, _sender = worker.multiprocessing.Pipe(duplex=False)
    alive = type("Alive", (), {"is_alive": lambda self: True})()
    assert worker._wait(receiver, alive, 0.1, None) == "not started"
    assert "did not start within 0.3 s" in worker._failure("not started", 0.1, None)


def test_the_timeout_help_says_what_it_covers():
    said = " ".join(run_cli("run", "--help").stdout.split())  # as one line, unwrapped
    assert "give up on one process of a configuration S seconds after it is ready" in said
    assert f"the longer of {worker.START_LIMIT_S:g} s and S" in said


class _Huge(Workload):
    """Inputs no machine can allocate (4 EiB), so that the allocator fails at once."""

    name = "huge"

    def build_model(self) -> nn.Module:
        return nn.Linear(1, 1)

    def make_batch(self, generator: torch.Generator, batch_size: int) -> tuple:
        return torch.empty(batch_size, 2**40), torch.empty(batch_size)


def test_a_cpu_allocation_failure_is_out_of_memory():
    workload = _Huge()
    spec = make_spec(workload, CPU, batch_size=2**20)
    result = run_config(spec, workload, CPU, StopRule(blocks=1), probe=False)
    assert result.status == "oom", result.error
    assert "DefaultCPUAllocator" in (result.error or "")
    assert not is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


def test_a_workload_named_twice_runs_once():
    from accelbench.cli.main import build_parser
    from accelbench.cli.run import request_from

    request = request_from(build_parser().parse_args(["run", "mlp", "seed-cnn", "mlp"]))
    assert [ref.name for ref in request.workloads] == ["mlp", "seed-cnn"]


def test_an_id_in_other_digits_is_refused_in_one_line(tmp_path):
    from accelbench.cli.options import result_id

    assert [result_id(t) for t in ("12", "²", "١٢", "1e6227b53cea")] == [12, None, None, None]
    db = tmp_path / "r.db"
    shutil.copy(REPO / "tests" / "data" / "schema6.db", db)
    out = run_cli("compare", "--baseline", "²", "--candidate", "1", "--db", str(db))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "accelbench: error: no stored result or sweep '²'; see `accelbench results`"
    ]


def test_export_out_naming_a_file_says_so(tmp_path):
    existing = tmp_path / "a-file"
    existing.write_text("")
    with pytest.raises(UsageError, match="a-file: is a file, not a directory"):
        export_model(get_workload("mlp"), ["onnx"], existing, {})


@pytest.mark.parametrize("command", ["export", "verify"])
def test_export_and_verify_refuse_a_bad_shape_in_one_line(tmp_path, command):
    # both check the model in a worker before anything is trained or exported: its error
    # comes back as the one line it raised
    path = tmp_path / "tiny.py"
    path.write_text("from torch import nn\n\ndef make():\n    return nn.Linear(4, 3)\n")
    model = ("--model", f"{path}:make", "--input-shape", "5", "--num-classes", "3")
    extra = (
        ("--to", "onnx", "--out", str(tmp_path / "out"))
        if command == "export"
        else ("--devices", "cpu", "--db", str(tmp_path / "v.db"))
    )
    out = run_cli(command, *model, *extra)
    assert out.returncode == 2, out.stderr
    assert "rejects inputs of shape 2x5" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_the_library_runs_a_workload_named_twice_once():
    from accelbench.workflows.benchmark import BenchmarkRequest, plan
    from accelbench.workloads import WorkloadRef

    request = BenchmarkRequest(workloads=(WorkloadRef("mlp"), WorkloadRef("mlp")), devices="cpu")
    assert len(plan(request).configs) == 1


def test_a_wall_clock_that_jumps_does_not_move_a_workers_start(monkeypatch):
    """Durations come from the monotonic clock: a wall clock set a year back (NTP, a VM
    resumed) once made a worker's start read 31,536,003 s."""
    now = time.time
    monkeypatch.setattr(time, "time", lambda: now() - 365 * 24 * 3600.0)
    result = worker.run_isolated(
        make_spec(get_workload("mlp"), CPU), WorkloadRef("mlp"), StopRule(blocks=1), 60.0,
        probe=False,
    )  # fmt: skip
    assert result.status == "ok", result.error
    assert 0 <= result.facts.get(Overhead).start_s < 60


def test_a_hang_up_ignored_when_the_command_starts_stays_ignored():
    """`nohup accelbench run ...` asks that closing the terminal not end the run."""
    from accelbench.cli.main import _sigterm_raises

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with _sigterm_raises():
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_IGN, signal.SIG_DFL)
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)
