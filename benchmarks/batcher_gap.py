"""The dynamic batcher on a simulated device: a batch run to its end before the pipe is read
(the batcher before issue 35's pipelining) against a batch launched, the pipe read while it
runs, then synchronized; side by side in one process, alternating, under real MLPerf LoadGen.

    python3 benchmarks/batcher_gap.py [ROUNDS]

The device: a batch of n takes A + B * n seconds after its launch returns, the host free
meanwhile, as a GPU whose batch is one CUDA graph replay (A, B: 30 queries in 2.5 ms and 48 in
3.7 ms, resnet50 bf16 channels_last on the H200). `serving.serve` runs Offline and the Server
search at a 10 ms p99 bound, batches of at most 48, a 0.5 ms wait (the auto settings there).
Per way it prints Offline, Server QPS at the bound, their ratio, the median batch formed at
the best Server target, and the device's idle time between one batch's end and the next
launch in the Offline run (its queue is never empty there: that gap is the host's per-batch
time, which a second batch in flight could hide at most).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from accelbench.backends.batcher import BatchWork  # noqa: E402
from accelbench.backends.serving import ServeReport, ServeSettings, Warm, serve  # noqa: E402

A_S, B_S = 0.00058, 0.000064  # 30 -> 2.5 ms, 48 -> 3.7 ms
SETTINGS = ServeSettings(
    scenarios=("server",), latency_bound_s=0.010, max_batch=48, wait_s=0.0005,
    duration_s=1.0, min_queries=1024, search_steps=6,
)  # fmt: skip


class Device:
    """The simulated device; `gaps`: seconds from each batch's end (its time up, whether or
    not the host has noticed) to the next launch."""

    def __init__(self) -> None:
        self.busy_until: float | None = None
        self.gaps: list[float] = []

    def launch(self, size: int) -> float:
        now = time.monotonic()
        if self.busy_until is not None:  # idle from the batch's end, noticed or not
            self.gaps.append(now - self.busy_until)
        self.busy_until = now + A_S + B_S * size
        return self.busy_until

    def done(self, until: float) -> bool:
        return time.monotonic() >= until

    def finish(self, until: float) -> None:
        time.sleep(max(0.0, until - time.monotonic()))


def ways(device: Device) -> dict[str, BatchWork[Any]]:
    def run_batch(size: int) -> None:
        device.finish(device.launch(size))

    return {
        "run to its end, then read": BatchWork.synchronous(run_batch),
        "launched, read while it runs": BatchWork(device.launch, device.done, device.finish),
    }


def once(name: str) -> tuple[ServeReport, list[float]]:
    device = Device()
    work = ways(device)[name]
    warm = Warm(A_S + B_S, A_S + B_S * SETTINGS.max_batch, A_S + B_S * 8)
    report = serve(SETTINGS, work, warm)
    return report, device.gaps


def offline_gaps(report: ServeReport, gaps: list[float]) -> list[float]:
    """The Offline run's gaps: its batches come right after the SingleStream run's."""
    single = sum(report.runs["singlestream"].batches.values())
    offline = sum(report.runs["offline"].batches.values())
    return gaps[single : single + offline - 1]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with open("/proc/loadavg") as f:
        print(f"load before: {f.read().split()[:3]}", flush=True)
    for r in range(rounds):
        for name in ways(Device()):
            report, gaps = once(name)
            server, offline = report.server, report.runs["offline"].result.qps
            best = server.best if server else None
            sizes = [s for s, c in (best.batches if best else {}).items() for _ in range(c)]
            idle = offline_gaps(report, gaps)
            ratio = report.server_to_offline
            print(
                f"{r + 1} {name:30s} offline {offline:8.0f}/s  server "
                f"{(server.qps if server and server.qps else 0):8.0f} QPS  ratio "
                f"{ratio if ratio is not None else float('nan'):.2f}  median batch "
                f"{statistics.median(sizes) if sizes else 0:4.0f}  offline gap median "
                f"{statistics.median(idle) * 1e6:6.0f} us p90 "
                f"{statistics.quantiles(idle, n=10)[-1] * 1e6:6.0f} us",
                flush=True,
            )
    with open("/proc/loadavg") as f:
        print(f"load after: {f.read().split()[:3]}")


if __name__ == "__main__":
    main()
