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


def _proc(
    root: Path, pid: int, name: bytes, parent: int, ticks: int, command: str = "",
    exe: Path | None = None, started: int = 1000,
) -> None:  # fmt: skip
    folder = root / str(pid)
    folder.mkdir(parents=True, exist_ok=True)
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
    # stime cutime cstime priority nice threads itreal starttime vsize (proc(5))
    user, system = ticks // 2, ticks - ticks // 2
    tail = f"S {parent} 1 1 0 -1 0 0 0 0 0 {user} {system} 0 0 20 0 1 0 {started} 999\n"
    (folder / "stat").write_bytes(f"{pid} (".encode() + name + b") " + tail.encode())
    (folder / "cmdline").write_bytes(command.replace(" ", "\0").encode())
    if exe is not None:
        (folder / "exe").symlink_to(exe)


def _tree(root: Path, later: int, python: Path, other: Path) -> None:
    """Ourselves (100, a child of 50), a busy child, an unrelated process of our interpreter,
    another program's, an idle one and a grandchild below the threshold."""
    self_ = root / "self"
    self_.mkdir(parents=True)
    (self_ / "exe").symlink_to(python)
    _proc(root, 50, b"python3", 1, 30 + 10 * later, "accelbench run x --token t", python)
    _proc(root, 100, b"python3", 50, 500 + 900 * later, "", python)  # ourselves: never named
    _proc(root, 200, b"python3", 100, 10 + 190 * later, "python3 -m torch._inductor.w", python)
    _proc(root, 250, b"python3", 1, 20 + 80 * later, "python3 -m leftover", python)
    _proc(root, 300, b"my job) (x", 1, 40 + 60 * later, "secret --token abc", other)
    _proc(root, 400, b"idle", 1, 7)
    _proc(root, 500, b"grandchild", 200, 4 * later)  # 0.02 cores: below the threshold


def test_the_busiest_are_named_with_a_command_only_where_they_run_this_python(tmp_path):
    python, other = tmp_path / "python3", tmp_path / "other"
    python.write_text(""), other.write_text("")
    for later, when in ((0, "before"), (1, "after")):
        _tree(tmp_path / when, later, python, other)
    before = ProcessTimes.read(tmp_path / "before", ticks_per_s=100)
    after = ProcessTimes.read(tmp_path / "after", ticks_per_s=100)
    assert after.stats[200].cpu_s == 2.0 and after.stats[300].name == "my job) (x"
    named = busiest(before, after, 2.0, 100, root=tmp_path / "after")
    assert named == (
        "pid 200 python3 (ours: python3 -m torch._inductor.w): 0.95 cores",
        "pid 250 python3 (this Python's: python3 -m leftover): 0.40 cores",
        "pid 300 my job) (x: 0.30 cores",  # another program: no command line kept
    )
    top = busiest(before, after, 2.0, 200, root=tmp_path / "after")  # seen from the child
    assert top[0] == "pid 100 python3: 4.50 cores"  # its parent, with no command line to show
    assert busiest(before, after, 0.0, 100) == ()


def test_an_ancestor_is_named_as_such(tmp_path):
    python = tmp_path / "python3"
    python.write_text("")
    for ticks, when in ((0, "before"), (100, "after")):
        root = tmp_path / when
        (root / "self").mkdir(parents=True)
        (root / "self" / "exe").symlink_to(python)
        _proc(root, 50, b"python3", 1, ticks, "python3 -m accelbench run", python)
        _proc(root, 100, b"python3", 50, 0, "", python)
    named = busiest(
        ProcessTimes.read(tmp_path / "before", 100), ProcessTimes.read(tmp_path / "after", 100),
        1.0, 100, root=tmp_path / "after",
    )  # fmt: skip
    assert named == ("pid 50 python3 (our ancestor: python3 -m accelbench run): 1.00 cores",)


def test_a_pid_given_to_a_new_process_counts_all_its_time(tmp_path):
    _proc(tmp_path / "before", 77, b"old", 1, 500, started=10)
    _proc(tmp_path / "after", 77, b"new", 1, 50, started=20)  # fewer ticks: another process
    _proc(tmp_path / "after", 78, b"newer", 1, 30)
    named = busiest(
        ProcessTimes.read(tmp_path / "before", 100), ProcessTimes.read(tmp_path / "after", 100),
        1.0, 999, root=tmp_path / "after",
    )  # fmt: skip
    assert named == ("pid 77 new: 0.50 cores", "pid 78 newer: 0.30 cores")


def test_a_name_cut_mid_character_or_unreadable_stat_is_no_failure(tmp_path):
    _proc(tmp_path, 5, "é".encode() * 7 + b"\xc3", 1, 10)  # 15 bytes, the last half a char
    (tmp_path / "6").mkdir()  # no stat: ended between the listing and the read
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "stat").write_bytes(b"7 (short) S 1\n")  # too few fields
    times = ProcessTimes.read(tmp_path, ticks_per_s=100)
    assert set(times.stats) == {5} and times.stats[5].name == "é" * 7 + "\ufffd"


def test_no_proc_names_nothing(tmp_path):
    empty = ProcessTimes.read(tmp_path / "missing")
    assert empty.stats == {} and busiest(empty, empty, 1.0, 1) == ()


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
