"""Naming the processes that used the CPU over a region (devices/processes), from a /proc tree
written here; and on this machine's own /proc, a busy child of ours."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from accelbench.core.metrics import MachineState
from accelbench.devices.processes import ProcessTimes, busiest
from accelbench.devices.state import StateMeter
from accelbench.render.console.run_notes import machine_state_notes


def _proc(root: Path, pid: int, name: str, parent: int, ticks: int, command: str = "") -> None:
    folder = root / str(pid)
    folder.mkdir(parents=True, exist_ok=True)
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    user, system = ticks // 2, ticks - ticks // 2
    (folder / "stat").write_text(
        f"{pid} ({name}) S {parent} 1 1 0 -1 0 0 0 0 0 {user} {system} 0 0 20 0 1 0\n"
    )
    (folder / "cmdline").write_bytes(command.replace(" ", "\0").encode())


def test_the_busiest_others_are_named_ours_with_their_command_and_others_without(tmp_path):
    us = 100
    for ticks, when in ((0, "before"), (1, "after")):
        root = tmp_path / when
        _proc(root, us, "python3", 1, 500 + 900 * ticks)  # ourselves: never named
        _proc(root, 200, "python3", us, 10 + 190 * ticks, "python3 -m torch._inductor.worker")
        _proc(root, 300, "my job (x)", 1, 40 + 60 * ticks, "secret --token abc")
        _proc(root, 400, "idle", 1, 7)  # no time used
        _proc(root, 500, "grandchild", 200, 0 + 4 * ticks)  # 0.02 cores: below the threshold
        (root / "self").mkdir()  # not a pid
    before = ProcessTimes.read(tmp_path / "before", ticks_per_s=100)
    after = ProcessTimes.read(tmp_path / "after", ticks_per_s=100)
    assert (
        after.cpu_s[200] == 2.0 and after.names[300] == "my job (x)" and after.parents[500] == 200
    )
    named = busiest(before, after, 2.0, us, root=tmp_path / "after")
    assert named == (
        "pid 200 python3 (ours: python3 -m torch._inductor.worker): 0.95 cores",
        "pid 300 my job (x): 0.30 cores",
    )
    assert busiest(before, after, 0.0, us) == ()


def test_a_process_that_started_during_the_region_counts_all_its_time(tmp_path):
    _proc(tmp_path / "before", 1, "init", 0, 5)
    _proc(tmp_path / "after", 1, "init", 0, 5)
    _proc(tmp_path / "after", 77, "new", 1, 50)
    named = busiest(
        ProcessTimes.read(tmp_path / "before", 100), ProcessTimes.read(tmp_path / "after", 100),
        1.0, 999, root=tmp_path / "after",
    )  # fmt: skip
    assert named == ("pid 77 new: 0.50 cores",)  # not ours: 999 is


def test_no_proc_names_nothing(tmp_path):
    empty = ProcessTimes.read(tmp_path / "missing")
    assert empty.cpu_s == {} and busiest(empty, empty, 1.0, 1) == ()


def test_the_note_says_whose_the_cores_were():
    state = MachineState(
        seconds=2.0, cores=16, other_cpu_cores=1.0,
        other_cpu_busiest=("pid 200 python3 (ours: python3 -m x): 0.95 cores",),
    )  # fmt: skip
    (note,) = machine_state_notes(state)
    assert note.startswith(
        "other processes used 1 cores during the timed samples (busiest: pid 200 python3 "
        "(ours: python3 -m x): 0.95 cores): "
    )


def test_a_busy_child_of_ours_is_named_in_the_machine_state():
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        with StateMeter() as meter:
            time.sleep(1.0)
    finally:
        child.kill()
        child.wait()
    state = meter.state
    assert state is not None and state.other_cpu_cores and state.other_cpu_cores > 0.3
    mine = [n for n in state.other_cpu_busiest if n.startswith(f"pid {child.pid} ")]
    assert mine and "(ours: " in mine[0] and "while True: pass" in mine[0], state
    assert os.getpid() not in {int(n.split()[1]) for n in state.other_cpu_busiest}
