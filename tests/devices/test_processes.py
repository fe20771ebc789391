"""Naming the processes that used the CPU over a region (devices/processes), from a /proc tree
written here; and on this machine's own /proc, a busy child of ours."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accelbench.analysis.trust import machine_caveats
from accelbench.devices.processes import ProcessTimes, busiest
from accelbench.devices.state import MachineState, StateMeter


def machine_state_notes(state):
    return [c.text for c in machine_caveats(state)]



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


def _readings(tmp_path: Path) -> tuple[ProcessTimes, ProcessTimes, Path]:
    python, other = tmp_path / "python3", tmp_path / "other"
    python.write_text(""), other.write_text("")
    for later, when in ((0, "before"), (1, "after")):
        _tree(tmp_path / when, later, python, other)
    before = ProcessTimes.read(tmp_path / "before", ticks_per_s=100)
    return before, ProcessTimes.read(tmp_path / "after", ticks_per_s=100), tmp_path / "after"


def test_the_busiest_are_named_with_a_command_only_where_the_tree_says_ours(tmp_path):
    before, after, root = _readings(tmp_path)
    assert after.stats[200].cpu_s == 2.0 and after.stats[300].name == "my job) (x"
    assert busiest(before, after, 2.0, 100, root=root) == (
        "pid 200 python3 (ours: python3 -m torch._inductor.w): 0.95 cores",
        "pid 250 python3 (same Python as this run, not started by it): 0.40 cores",  # no command
        "pid 300 my job) (x: 0.30 cores",  # another program's: its name only
    )
    top = busiest(before, after, 2.0, 200, root=root)  # seen from the child
    assert top[0] == "pid 100 python3 (our ancestor): 4.50 cores"  # no command line to show
    assert busiest(before, after, 0.0, 100) == ()


def test_another_users_process_or_a_pid_given_anew_keeps_no_command_line(tmp_path, monkeypatch):
    before, after, root = _readings(tmp_path)
    _proc(root, 200, b"python3", 100, 200, "someone else", started=5000)  # since the reading
    assert busiest(before, after, 2.0, 100, root=root)[0] == "pid 200 python3 (ours): 0.95 cores"
    monkeypatch.setattr(os, "getuid", lambda: os.geteuid() + 1)
    assert busiest(before, after, 2.0, 100, root=root)[1] == "pid 250 python3: 0.40 cores"


def test_an_ancestor_is_named_with_its_command(tmp_path):
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


def test_a_process_started_since_counts_all_its_time_one_missed_none(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    (before / "uptime").write_text("0.15 0.30\n")  # read 15 ticks after boot
    _proc(before, 77, b"old", 1, 500, started=10)
    _proc(after, 77, b"new", 1, 50, started=20)  # fewer ticks: its pid was given anew
    _proc(after, 78, b"newer", 1, 30, started=16)
    _proc(after, 79, b"missed", 1, 900, started=3)  # running before, not in the first reading
    times = ProcessTimes.read(before, 100), ProcessTimes.read(after, 100)
    assert times[0].at_ticks == 15.0 and times[1].at_ticks is None
    named = busiest(*times, 1.0, 999, root=after)
    assert named == ("pid 77 new: 0.50 cores", "pid 78 newer: 0.30 cores")


def test_what_passes_is_above_a_tick_at_each_end_and_above_min_cores(tmp_path):
    def named(ticks: dict[int, int], seconds: float) -> list[int]:
        for when, scale in (("before", 0), ("after", 1)):
            for pid, n in ticks.items():
                _proc(tmp_path / when, pid, b"p", 1, n * scale)
        times = [ProcessTimes.read(tmp_path / w, ticks_per_s=100) for w in ("before", "after")]
        return [int(n.split()[1]) for n in busiest(*times, seconds, 999, root=tmp_path)]

    assert named({10: 4, 11: 1}, 0.1) == [10]  # 0.4 and 0.1 cores; two ticks are 0.2
    assert named({10: 60, 11: 40}, 10.0) == [10]  # 0.06 and 0.04 cores; MIN_CORES is 0.05


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
        "other processes used 1 core during the timed samples (busiest: pid 200 python3 "
        "(ours: python3 -m x): 0.95 cores): "
    )


@pytest.mark.alone  # other tests' processes would crowd the child out of the busiest
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
    assert state is not None and state.other_cpu_cores is not None
    mine = [n for n in state.other_cpu_busiest if n.startswith(f"pid {child.pid} ")]
    if not mine:
        # a loaded host left the child too little CPU to be named among the busiest: the
        # naming itself is checked on injected readings above; this must not fail for load
        pytest.skip(f"the host was too busy for the child to be among the busiest: {state}")
    assert mine and "(ours: " in mine[0] and "while True: pass" in mine[0], state
    assert os.getpid() not in {int(n.split()[1]) for n in state.other_cpu_busiest}
