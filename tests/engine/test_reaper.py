"""The user's code runs only in workers, and nothing it starts outlives its configuration
(engine/reaper, analysis/metrics.model_facts): a forward that exits or forks when it is not in
a worker cannot end the command, and a child that left the worker's session is stopped."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's subreaper")

MODEL = textwrap.dedent(
    """
    import multiprocessing
    import os
    import time

    from torch import nn

    PIDS = os.environ["ACCELBENCH_TEST_PIDS"]


    def _linger():
        with open(PIDS, "a") as f:
            f.write(f"{os.getpid()}\\n")
        null = os.open(os.devnull, os.O_RDWR)  # the command's output pipes are not held open
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 1024)
        time.sleep(120)
        os._exit(0)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 2)
            self.forked = False

        def forward(self, x):
            if multiprocessing.parent_process() is None:  # the command, not a worker
                os._exit(7)
            if not self.forked:
                self.forked = True
                if os.fork() == 0:  # a child in the worker's group, then one in a session
                    if os.fork() == 0:
                        os.setsid()
                        _linger()
                    _linger()
            return self.fc(x)


    def make():
        return Net()
    """
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent's wait is missing


def test_what_the_models_code_starts_ends_with_its_configuration(tmp_path):
    (tmp_path / "forky.py").write_text(MODEL)
    pids = tmp_path / "pids.txt"
    out = run_cli(
        "run", "--model", f"{tmp_path / 'forky.py'}:make", "--input-shape", "8",
        "--num-classes", "2", "--devices", "cpu", "--modes", "infer", "--blocks", "2",
        "--no-latency", "--json", "--db", str(tmp_path / "r.db"),
        env={"ACCELBENCH_TEST_PIDS": str(pids)},
    )  # fmt: skip
    # the command never ran the forward itself (its FLOP count and shape checks are the
    # worker's), so the forward's exit in the command never happened
    assert out.returncode == 0, out.stderr
    (result,) = json.loads(out.stdout)["results"]
    assert result["status"] == "ok"
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) >= 2 * len(result["rounds"])  # two for each model a worker built
    deadline = time.monotonic() + 5
    while any(map(_alive, started)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, started)), [p for p in started if _alive(p)]
    stopped = result["metrics"]["left_running"]
    assert stopped and all(text.startswith("pid ") for text in stopped)
    assert any("outlived it" in c["text"] for c in result["caveats"])
    assert os.getsid(0) not in {os.getsid(p) for p in started if _alive(p)}


FAKED_SLEEP = textwrap.dedent(
    """
    import time


    def _sleep(seconds):  # a time-faking library's sleep, as the red-team's battery saw one
        raise OSError(22, "Invalid argument (faked clock)")


    time.sleep = _sleep
    """
)


def test_a_failed_look_for_what_the_worker_left_is_said_not_raised(monkeypatch):
    from accelbench.engine import reaper

    def fail(seconds: float) -> None:
        raise OSError(22, "faked clock")

    monkeypatch.setattr(reaper.time, "sleep", fail)
    with reaper.Reaper() as watching:
        pass
    assert watching.stopped == ["unchecked: OSError: [Errno 22] faked clock"]


def test_a_measurement_outlives_a_clean_up_that_fails(tmp_path):
    """Everything after the samples may fail (here the reaper's sleep): the configuration just
    measured is stored, the failure a caveat, and the command exits 0."""
    (tmp_path / "faked").mkdir()
    (tmp_path / "faked" / "sitecustomize.py").write_text(FAKED_SLEEP)
    path = os.pathsep.join([str(tmp_path / "faked"), os.environ.get("PYTHONPATH", "")])
    db = tmp_path / "r.db"
    args = ["mlp", "--blocks", "4", "--rounds", "1", "--no-verdict", "--db", str(db)]
    out = run_cli("run", *args, env={"PYTHONPATH": path})
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    stored = json.loads(run_cli("results", "--json", "--db", str(db)).stdout)
    assert [r["status"] for r in stored] == ["ok"]
    caveats = " ".join(c["text"] for c in stored[0]["caveats"])
    assert "whether the worker left processes running is unknown" in caveats
    assert "faked clock" in caveats
