"""The user's code runs only in workers (engine/worker.describe_isolated, call_isolated): the
command plans a `--model` from what a worker that loaded it says, and `verify` trains and
`export` exports it in workers, so a model file, factory or forward that exits, dies, hangs,
forks or changes the directory reaches the command as one line (or an error row), or not at
all, and leaves no process behind."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from accelbench.store.db import Store
from tests.conftest import digest, run_cli

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

MODELS = textwrap.dedent(
    """
    import multiprocessing
    import os
    import sys

    from torch import nn

    with open(os.environ["ACCELBENCH_TEST_WHERE"], "a") as f:  # who imported this file
        f.write(f"{multiprocessing.parent_process() is not None}\\n")


    def make():
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))


    def leaves():
        sys.exit(0)


    def dies():
        os._exit(3)


    def moves():
        os.chdir("/")
        return make()


    class Quits(nn.Module):
        def forward(self, x):
            sys.exit(0)


    def quits():
        return Quits()
    """
)
OPTIONS = ["--input-shape", "8", "--num-classes", "2", "--devices", "cpu", "--blocks", "2"]
OPTIONS += ["--no-latency", "--quiet"]


def _run(tmp_path, factory, *more):
    (tmp_path / "models.py").write_text(MODELS)
    where = tmp_path / "where.txt"
    out = run_cli(
        "run", "--model", f"models.py:{factory}", *OPTIONS, *more, "--db", "rel.db",
        cwd=tmp_path, env={"ACCELBENCH_TEST_WHERE": str(where)},
    )  # fmt: skip
    return out, where.read_text().split() if where.exists() else []


def test_the_command_never_imports_the_models_file(tmp_path):
    out, where = _run(tmp_path, "make")
    assert out.returncode == 0, out.stderr
    assert where and set(where) == {"True"}  # each import was in a worker process


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("leaves", "accelbench: error: models.py:leaves: the model's code called sys.exit(0)"),
        ("dies", "accelbench: error: loading models.py:dies failed: the worker process died "
                 "(exit code 3)"),
    ],
)  # fmt: skip
def test_a_factory_that_ends_its_program_is_one_line_exit_2_and_stores_nothing(
    tmp_path, factory, message
):
    # a database with a result in it, for the failing run to leave alone: one process will do
    first, _ = _run(tmp_path, "make", "--rounds", "1", "--no-verdict")
    assert first.returncode == 0, first.stderr
    before = digest(tmp_path / "rel.db")
    out, _ = _run(tmp_path, factory)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == message
    assert digest(tmp_path / "rel.db") == before


def test_a_factory_that_changes_directory_moves_nothing_of_the_commands(tmp_path):
    out, _ = _run(tmp_path, "moves")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "rel.db").is_file() and "in rel.db" in out.stdout


def test_a_forward_that_ends_its_program_is_its_configurations_error(tmp_path):
    (tmp_path / "models.py").write_text(MODELS)
    out = run_cli(
        "run", "--model", "models.py:quits", *OPTIONS, "--json", "--db", "rel.db",
        cwd=tmp_path, env={"ACCELBENCH_TEST_WHERE": str(tmp_path / "where.txt")},
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    (result,) = json.loads(out.stdout)["results"]
    assert result["status"] == "error"
    assert result["error"] == "the model's code called sys.exit(0)"


# verify and export: the model loads, is checked, trains and is exported in workers too (issue
# 36): what the model does to its process ends that worker, never the command, and leaves
# nothing running. Each misbehaviour happens in every forward ("always": export's), or only
# in a forward that trains in reduced precision ("bf16": verify's second run, after the CPU
# fp32 baseline was stored).
HOSTILE = textwrap.dedent(
    """
    import ctypes
    import multiprocessing
    import os
    import time

    import torch
    from torch import nn

    WHEN = os.environ["ACCELBENCH_TEST_WHEN"]
    PIDS = os.environ["ACCELBENCH_TEST_PIDS"]
    with open(os.environ["ACCELBENCH_TEST_WHERE"], "a") as f:  # who imported this file
        f.write(f"{multiprocessing.parent_process() is not None}\\n")


    def _tell(pid):
        with open(PIDS, "a") as f:
            f.write(f"{pid}\\n")


    def _linger():  # a daemon: its own session, the command's pipes let go
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 1024)
        os.setsid()
        time.sleep(600)
        os._exit(0)


    class Tiny(nn.Module):
        def __init__(self, misbehave=None):
            super().__init__()
            self.fc = nn.Linear(3 * 4 * 4, 10)
            self.misbehave = misbehave
            self.forked = False

        def forward(self, x):
            out = self.fc(nn.functional.adaptive_avg_pool2d(x, 4).flatten(1))
            low = self.training and out.dtype != torch.float32
            if self.misbehave and (WHEN == "always" or low):
                self.misbehave(self)
            return out


    def _segfault(model):
        _tell(os.getpid())
        ctypes.string_at(0)


    def _sleep(model):
        _tell(os.getpid())
        time.sleep(600)


    def _fork(model):
        if not model.forked:
            model.forked = True
            pid = os.fork()
            if pid == 0:
                _linger()
            _tell(pid)


    def exits():
        _tell(os.getpid())
        os._exit(7)


    def segfaults():
        return Tiny(_segfault)


    def sleeps():
        return Tiny(_sleep)


    def forks():
        return Tiny(_fork)
    """
)
SHAPE = ["--input-shape", "3x8x8", "--num-classes", "10"]
VERIFY = ["--devices", "cpu", "--epochs", "1", "--batch-size", "64", "--lr", "0.1", "--quiet"]
VERIFY += ["--db", "v.db", "--json"]
COMMANDS = {"verify": VERIFY, "export": ["--out", "out"]}


def _hostile(tmp_path, command, factory, *extra, when="always"):
    """Run `command` on the hostile model; its output, the pids the model's code told of, and
    whether each import of the model's file was in a worker."""
    (tmp_path / "hostile.py").write_text(HOSTILE)
    pids, where = tmp_path / "pids.txt", tmp_path / "where.txt"
    out = run_cli(
        command, "--model", f"hostile.py:{factory}", *SHAPE, *COMMANDS[command], *extra,
        cwd=tmp_path, env={"ACCELBENCH_TEST_WHEN": when, "ACCELBENCH_TEST_PIDS": str(pids),
                           "ACCELBENCH_TEST_WHERE": str(where)},
    )  # fmt: skip
    told = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    return out, told, where.read_text().split() if where.exists() else []


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's wait is missing


def _all_ended(pids):
    deadline = time.monotonic() + 5  # the kernel's own bookkeeping, not ours
    while any(map(_running, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if _running(p)] == []


def _rows(out):
    return [
        (r["spec"]["precision"], r["status"], r["error"]) for r in json.loads(out.stdout)["results"]
    ]


@LINUX
@pytest.mark.parametrize("command", ["verify", "export"])
def test_a_factory_that_calls_os_exit_is_one_line_exit_2(tmp_path, command):
    out, told, where = _hostile(tmp_path, command, "exits")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == (
        f"accelbench: error: {'loading' if command == 'verify' else 'exporting'} "
        "hostile.py:exits failed: the worker process died (exit code 7)"
    )
    assert told and set(where) == {"True"} and _all_ended(told)
    assert not (tmp_path / "v.db").exists()  # verify: nothing was trained, nothing stored


@LINUX
def test_export_a_forward_that_segfaults_is_one_line_exit_2(tmp_path):
    out, told, _ = _hostile(tmp_path, "export", "segfaults")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == (
        "accelbench: error: exporting hostile.py:segfaults failed: the worker process died "
        "(killed by SIGSEGV)"
    )
    assert told and _all_ended(told)


@LINUX
def test_export_a_forward_that_sleeps_stops_at_the_timeout(tmp_path):
    out, told, _ = _hostile(tmp_path, "export", "sleeps", "--timeout", "3")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == (
        "accelbench: error: exporting hostile.py:sleeps failed: no result within --timeout 3 s; "
        "the worker was stopped"
    )
    assert told and _all_ended(told)


@LINUX
@pytest.mark.parametrize(
    ("factory", "timeout", "status", "error"),
    [
        ("segfaults", "900", "error", "the worker process died (killed by SIGSEGV)"),
        ("sleeps", "15", "timeout", "no result within --timeout 15 s; the worker was stopped"),
    ],
)
def test_verify_a_run_whose_worker_dies_or_hangs_is_its_row_and_the_baseline_is_kept(
    tmp_path, factory, timeout, status, error
):
    out, told, where = _hostile(
        tmp_path, "verify", factory, "--precisions", "fp32,bf16", "--timeout", timeout, when="bf16"
    )
    assert out.returncode == 1 and out.stderr == ""
    assert _rows(out) == [("fp32", "ok", ""), ("bf16", status, error)]
    with Store(tmp_path / "v.db", create=False) as store:
        stored = store.results()[::-1]
    assert [(r.spec.precision, r.status, r.error) for r in stored] == _rows(out)
    assert told and set(where) == {"True"} and _all_ended(told)


@LINUX
@pytest.mark.parametrize("command", ["verify", "export"])
def test_what_the_model_forks_is_stopped_and_said(tmp_path, command):
    json_out = ["--json"] if command == "export" else []
    out, told, where = _hostile(tmp_path, command, "forks", *json_out)
    # verify: one epoch learns too little for a verdict (exit 1, "inconclusive"), enough here
    assert out.returncode == (1 if command == "verify" else 0), out.stderr
    assert told and set(where) == {"True"} and _all_ended(told)
    if command == "export":
        (report,) = json.loads(out.stdout)
        assert report["validation"]["ok"] is True
        (line,) = out.stderr.splitlines()
        assert line.startswith("accelbench: ") and line.endswith("; they were stopped")
        assert "outlived the export's worker (pid " in line
    else:
        (result,) = json.loads(out.stdout)["results"]
        assert result["status"] == "ok" and result["metrics"]["left_running"]
        assert result["metrics"]["verify"]["verdict"] == "inconclusive" and out.stderr == ""
        assert {int(x.split()[1]) for x in result["metrics"]["left_running"]} <= set(told)
