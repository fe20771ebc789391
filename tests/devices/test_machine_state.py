"""The machine's state over the timed samples (issue 15, item 4) and the progress bar's time
left (item 15): host load from injected /proc counters, NVML through a fake, the warnings, and
a real run beside a busy process."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time

import pytest
from rich.console import Console
from rich.progress import TimeRemainingColumn

from accelbench.analysis.trust import machine_caveats
from accelbench.core.facts import Facts, check
from accelbench.devices.processes import TOP
from accelbench.devices.state import MACHINE_STATE, HostReader, MachineState, NvmlState, StateMeter
from accelbench.engine.track import progress_bar
from tests.conftest import run_cli


def machine_state_notes(state):
    return [c.text for c in machine_caveats(state)]


def _stat(busy_ticks: int, steal_ticks: int = 0) -> str:
    # user nice system idle iowait irq softirq steal guest guest_nice
    return f"cpu  {busy_ticks} 0 0 99999 0 0 0 {steal_ticks} 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"


class _Counters:
    """Feeds HostReader known counters: each read advances to the next tuple."""

    def __init__(self, *points: tuple[float, int, float, int]) -> None:
        self.points = list(points)  # (clock s, busy ticks, own cpu s, steal ticks)
        self.now = self.points[0]

    def clock(self) -> float:
        self.now = self.points.pop(0)
        return self.now[0]

    def reader(self) -> HostReader:
        return HostReader(
            stat=lambda: _stat(self.now[1], self.now[3]),
            own_cpu_s=lambda: self.now[2],
            clock=self.clock,
            ticks_per_s=100,
        )


def test_other_processes_cpu_is_the_busy_time_less_our_own_over_the_interval():
    # 4 s apart: all CPUs busy 10 s more (1000 ticks), 3 s of it ours, 2 s stolen
    counters = _Counters((100.0, 5000, 20.0, 0), (104.0, 6000, 23.0, 200))
    with StateMeter(host=counters.reader()) as meter:
        pass
    state = meter.state
    assert state is not None and state.seconds == 4.0 and state.cores == os.cpu_count()
    assert state.other_cpu_cores == (10 - 3) / 4 and state.steal_cores == 0.5
    assert state.host_unavailable == "" and state.gpu_readings == 0
    assert state.load_average_1m is not None  # Linux has one


def test_an_unreadable_proc_stat_is_said_not_guessed():
    def missing() -> str:
        raise FileNotFoundError(2, "No such file or directory", "/proc/stat")

    with StateMeter(host=HostReader(stat=missing)) as meter:
        pass
    assert meter.state is not None and meter.state.other_cpu_cores is None
    assert "/proc/stat not readable" in meter.state.host_unavailable
    notes = machine_state_notes(meter.state)
    assert meter.state.host_unavailable in notes
    assert not any("other processes used" in note for note in notes)


def test_the_warnings_name_what_else_used_the_machine():
    busy = MachineState(seconds=5.0, cores=2, other_cpu_cores=1.7, load_average_1m=3.5)
    notes = machine_state_notes(busy)
    assert "other processes used 1.7 cores during the timed samples" in notes[0]
    assert "load average was 3.5" in notes[1] and "above the 2 cores" in notes[1]
    quiet = MachineState(seconds=5.0, cores=2, other_cpu_cores=0.05, load_average_1m=1.0)
    assert machine_state_notes(quiet) == []
    # a figure within the counters' ticking is not a warning
    short = MachineState(seconds=0.1, cores=2, other_cpu_cores=0.5, cpu_resolution_cores=0.6)
    assert machine_state_notes(short) == []


class _Process:
    def __init__(self, pid: int) -> None:
        self.pid = pid


class FakeNvml:
    """What NvmlState calls of pynvml; the clocks fall, the GPU heats, and reasons appear."""

    class NVMLError(Exception):
        pass

    def __init__(self) -> None:
        self.sm = [1980, 1755, 1410]
        self.temperature = [60, 71, 83]
        self.reasons = [0x1, 0x1 | 0x20, 0x8 | 0x2]  # idle; SW thermal; HW slowdown, app clocks
        self.calls = 0
        self.process_calls = 0

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:  # noqa: N802  (NVML's names)
        return f"gpu{index}"

    def nvmlDeviceGetClockInfo(self, handle: str, clock: int) -> int:  # noqa: N802
        self.calls += clock == 1
        return self.sm[min(self.calls, len(self.sm)) - 1] if clock == 1 else 2619

    def nvmlDeviceGetTemperature(self, handle: str, sensor: int) -> int:  # noqa: N802
        return self.temperature[min(self.calls, len(self.temperature)) - 1]

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:  # noqa: N802
        return self.reasons[min(self.calls, len(self.reasons)) - 1]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: str) -> list[_Process]:  # noqa: N802
        self.process_calls += 1
        return [_Process(os.getpid()), _Process(4242)]


def test_nvml_readings_give_the_throttle_names_the_clock_range_and_other_processes():
    nvml = FakeNvml()
    gpu = NvmlState(0, nvml=nvml)
    gpu.start()
    gpu.sample()
    state = gpu.stop(MachineState(seconds=1.0, cores=2))
    assert state.gpu_readings == 3
    assert (state.sm_clock_min_mhz, state.sm_clock_max_mhz) == (1410, 1980)
    assert state.memory_clock_min_mhz == state.memory_clock_max_mhz == 2619
    assert state.temperature_max_c == 83
    assert state.throttle_reasons == ("HW slowdown", "SW thermal slowdown")
    assert state.other_gpu_processes == 1 and state.other_gpu_pids == (4242,)
    notes = machine_state_notes(state)
    assert any("throttled" in n and "HW slowdown, SW thermal slowdown" in n for n in notes)
    assert any("1 other process(es) used the GPU" in n and "4242" in n for n in notes)


def test_an_nvml_call_that_fails_is_said_once_and_not_asked_again():
    class NoProcesses(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, handle: str) -> list[_Process]:  # noqa: N802
            self.process_calls += 1
            raise self.NVMLError("Not Supported")

    nvml = NoProcesses()
    with StateMeter(NvmlState(0, nvml=nvml), interval=0.01) as meter:
        time.sleep(0.1)
    assert meter.state is not None and meter.state.gpu_readings > 3
    assert nvml.process_calls == 1
    assert meter.state.gpu_unavailable == (
        "GPU state not read: processes: nvmlDeviceGetComputeRunningProcesses failed: Not Supported"
    )
    assert meter.state.gpu_unavailable in machine_state_notes(meter.state)


def test_without_nvml_the_gpu_state_says_why():
    with StateMeter(NvmlState(0)) as meter:  # no pynvml here, or no driver where it is
        pass
    assert meter.state is not None and meter.state.gpu_readings == 0
    assert meter.state.gpu_unavailable.startswith("GPU state not read: ")
    assert "NVML" in meter.state.gpu_unavailable or "nvidia-ml-py" in meter.state.gpu_unavailable


def test_the_record_passes_import_validation_and_reads_back():
    state = MachineState(
        1.5, 2, 0.4, 0.0, 1.2, throttle_reasons=("HW slowdown",),
        other_cpu_busiest=("pid 812 python3: 0.40 cores",),
    )  # fmt: skip
    stored = json.loads(json.dumps(state.to_metrics()))  # as stored: tuples become lists
    check(stored)
    assert Facts(stored).get(MachineState) == state
    bad = {MACHINE_STATE: {**state.to_metrics()[MACHINE_STATE], "cores": "two"}}
    try:
        check(bad)
    except ValueError as err:
        assert "machine_state.cores" in str(err)
    else:
        raise AssertionError("a wrong type passed validation")


@pytest.mark.alone  # detects another busy process: other tests would be one too
def test_a_run_beside_a_busy_process_records_it_and_warns(tmp_path):
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        args = ("run", "mlp", "--devices", "cpu", "--blocks", "1500", "--no-verdict")
        out = run_cli(*args, "--db", str(tmp_path / "r.db"))
    finally:
        busy.kill()
        busy.wait()
    assert out.returncode == 0, out.stderr
    assert "other processes used" in out.stdout and "figures may be low and noisy" in out.stdout
    listed = run_cli("results", "--db", str(tmp_path / "r.db"), "--json")
    state = json.loads(listed.stdout)[0]["metrics"][MACHINE_STATE]
    assert state["other_cpu_cores"] > 0.3 and state["seconds"] > 0
    # and whose they were: the busy process, by its pid (not a child of the worker), unless a
    # loaded host had TOP processes busier than it, each named instead (the naming itself is
    # checked on injected readings in test_processes.py)
    named = state["other_cpu_busiest"]
    if any(n.startswith(f"pid {busy.pid} python") for n in named):
        assert f"pid {busy.pid} python" in out.stdout
    else:
        assert len(named) == TOP and f"pid {named[0].split()[1]} " in out.stdout, state


def test_the_progress_bar_says_the_time_left_even_when_steps_are_minutes_apart():
    bar = progress_bar(Console(file=io.StringIO(), force_terminal=True))
    left = [c for c in bar.columns if isinstance(c, TimeRemainingColumn)]
    assert len(left) == 1
    now = [0.0]
    bar.get_time = lambda: now[0]  # type: ignore[method-assign]
    task_id = bar.add_task("configurations", total=4)
    task = bar.tasks[0]
    now[0] = 100.0
    bar.advance(task_id)  # one configuration in 100 s: rich's own estimate needs two steps
    assert task.time_remaining is None
    assert str(left[0].render(task)) == "0:05:00"
