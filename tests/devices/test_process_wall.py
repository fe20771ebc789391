"""A process's wall time from its start, as the console's last line says it (Linux)."""

import subprocess
import sys
import time

import pytest

from accelbench.devices.host import seconds_since_start, since_start

LINUX = sys.platform.startswith("linux")


def test_the_start_is_read_after_a_name_with_spaces_and_parentheses():
    fields_after_name = " ".join(["S"] + [str(n) for n in range(4, 22)] + ["250", "0", "0"])
    stat = f"4242 (my (odd) name) {fields_after_name}"
    assert since_start(stat, "12.50 99.0", ticks_per_s=100) == pytest.approx(10.0)


@pytest.mark.skipif(not LINUX, reason="/proc says when a process started on Linux only")
def test_a_process_that_slept_reports_at_least_its_sleep_and_at_most_its_lifetime():
    code = (
        "import time; time.sleep(0.6)\n"
        "from accelbench.devices.host import seconds_since_start\n"
        "print(seconds_since_start())"
    )
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lived = time.monotonic() - started
    assert 0.6 <= float(out.stdout) <= lived + 0.02, (out.stdout, lived)  # ticks are 10 ms


def test_none_where_the_os_does_not_say(monkeypatch):
    def missing(*args, **kwargs):
        raise FileNotFoundError("/proc/self/stat")

    monkeypatch.setattr("builtins.open", missing)
    assert seconds_since_start() is None
