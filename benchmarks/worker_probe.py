"""Preloaded into accelbench's fork server by benchmarks/worker_gap.py: wraps the worker so that
one thing it does can be left out ($GAP_VARIANT, read from the parent's environment in the job),
and so that, as it sends its result, it writes where its CPU time went ($GAP_OUT/<variant>.json):
each thread's user+system time, context switches, page faults, garbage collections, and which
environment variables the fork server's environment lacked or had otherwise."""

import gc
import json
import os
import resource
import signal
import threading
from pathlib import Path

from accelbench import levers
from accelbench.devices.processes import _parse, clock_ticks_per_s
from accelbench.engine import worker

_worker, _send = worker._worker, worker._send


def probed(sender, job):
    variant = job.environment.get("GAP_VARIANT", "as_is")
    kind = variant.rstrip("0123456789")  # as_is2: as_is again, its facts apart
    before = dict(os.environ)
    if kind == "no_adopt":
        worker._adopt = lambda environment: levers._load_plugins()
    elif kind == "no_watch":
        worker._die_with_parent = lambda sender, parent: None
    elif kind == "gc_freeze":
        gc.freeze()
    elif kind == "setpgid":  # lead a process group in the parent's session, not a session
        os.setsid = lead_group
    out = Path(job.environment.get("GAP_OUT", "/tmp")) / f"{variant}.json"

    def send(sender, message):
        if message[0] == "result":
            out.write_text(json.dumps(facts(variant, before, job.environment)))
        _send(sender, message)

    worker._send = send
    _worker(sender, job)


def lead_group():
    """What commit c6bc0e0's worker did in place of setsid (measured in part gap4)."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # writing to the terminal must not stop it


def facts(variant, before, parent_environment):
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "variant": variant,
        "threads": threads(),
        "python_threads": [t.name for t in threading.enumerate()],
        "voluntary_switches": usage.ru_nvcsw,
        "involuntary_switches": usage.ru_nivcsw,
        "minor_faults": usage.ru_minflt,
        "major_faults": usage.ru_majflt,
        "gc_stats": gc.get_stats(),
        "gc_frozen": gc.get_freeze_count(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "autogroup": read("/proc/self/autogroup"),
        "autogroup_enabled": read("/proc/sys/kernel/sched_autogroup_enabled"),
        "session_leader": os.getsid(0) == os.getpid(),
        "cpu": {"worker": last_cpu("self"), "server": last_cpu(str(os.getppid()))},
        "numa_nodes": sorted(p.name for p in Path("/sys/devices/system/node").glob("node[0-9]*")),
        "pages_by_node": pages_by_node(),
        "env_missing_in_server": sorted(set(parent_environment) - set(before)),
        "env_only_in_server": sorted(set(before) - set(parent_environment)),
        "env_changed": sorted(
            k for k in before if k in parent_environment and before[k] != parent_environment[k]
        ),
    }


def read(path):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def last_cpu(pid):
    """The CPU a process last ran on (/proc/<pid>/stat's field 39)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[36])


def pages_by_node():
    """This process's mapped pages on each NUMA node (/proc/self/numa_maps' N<node>= counts)."""
    counts = {}
    try:
        lines = Path("/proc/self/numa_maps").read_text().splitlines()
    except OSError:
        return counts
    for line in lines:
        for word in line.split():
            if word.startswith("N") and "=" in word:
                node, pages = word[1:].split("=")
                counts[node] = counts.get(node, 0) + int(pages)
    return counts


def threads():
    """Each thread's name and CPU seconds (user + system), from /proc, as accelbench reads it."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        try:
            stat = _parse((task / "stat").read_bytes(), clock_ticks_per_s())
        except (OSError, ValueError, IndexError):
            continue
        found.append([stat.name, stat.cpu_s])
    return sorted(found, key=lambda t: -t[1])


worker._worker = probed
