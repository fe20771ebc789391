"""The token batcher on a simulated generation: the pipe read only between batches (the loop
before the step hook: a prompt that arrived during a generation was stamped after it, and
waited the wait bound again) against the pipe read after every decode step; side by side in one
process, alternating, under real MLPerf LoadGen.

    python3 benchmarks/token_batcher_gap.py [ROUNDS] [TTFT_BOUND_MS]

The generation: a 10 ms prefill and 15 decode steps of 10 ms (160 ms a batch of any size, the
host free meanwhile), batches of at most 8, a 100 ms wait (the language models' default), a
TPOT bound of 100 ms and a TTFT bound of 250 ms unless given. The old way is the same loop
with a generation that never calls its step hook. Per way it prints Offline, Server QPS at the
bounds, their ratio, and each Server run's target, verdict and TTFT p99.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from accelbench.backends.serving_lm import (  # noqa: E402
    TokenReport,
    TokenSettings,
    TokenWarm,
    serve_tokens,
)
from accelbench.backends.token_batcher import Hook  # noqa: E402

PREFILL_S, STEP_S, NEW_TOKENS = 0.010, 0.010, 16
BATCH_S = PREFILL_S + (NEW_TOKENS - 1) * STEP_S


def generation(read_between_steps: bool):
    def generate(size: int, first: Hook | None = None, step: Hook | None = None) -> None:
        time.sleep(PREFILL_S)
        if first is not None:
            first()
        for _ in range(NEW_TOKENS - 1):
            time.sleep(STEP_S)
            if step is not None and read_between_steps:
                step()

    return generate


def line(way: str, report: TokenReport) -> str:
    assert report.server is not None
    offline, ratio = report.runs["offline"].result.qps, report.server_to_offline
    runs = ", ".join(
        f"{r.result.target_qps:.1f} {'VALID' if r.result.valid else 'INVALID'} "
        f"ttft99={r.ttft_s.get('99.00', 0.0) * 1e3:.0f}ms"
        for r in report.server.tried
    )
    server = f"{report.server.qps:.1f}" if report.server.qps else "none"
    ratio_text = f"{ratio:.2f}" if ratio else "-"
    return f"{way}: offline {offline:.1f} server {server} ratio {ratio_text} [{runs}]"


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    ttft_s = float(sys.argv[2]) / 1e3 if len(sys.argv) > 2 else 0.25
    settings = TokenSettings(
        scenarios=("server",), ttft_bound_s=ttft_s, tpot_bound_s=0.1,
        new_tokens=NEW_TOKENS, max_batch=8, wait_s=0.1,
    )  # fmt: skip
    for round_ in range(rounds):
        for way, reads in (("between batches", False), ("every step", True)):
            report = serve_tokens(settings, generation(reads), TokenWarm(BATCH_S, BATCH_S))
            print(f"round {round_ + 1} {line(way, report)}", flush=True)


if __name__ == "__main__":
    main()
