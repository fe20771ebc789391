"""The sentences below a run table for a served language model (mode serve on a generate
workload): one prompt at a time, Offline's tokens/s, and what the Server search found at the
TTFT and TPOT bounds, every figure LoadGen's."""

from __future__ import annotations

from ...modes.serve import Served, ServedRun
from ..text import number
from .server_runs import highest_valid, server_runs

__all__ = ["token_notes", "token_percentiles"]


def token_notes(served: Served) -> list[str]:
    notes = []
    for run in served.runs:
        if run.scenario == "singlestream" and run.process == 0:
            notes.append(f"one prompt at a time: {token_percentiles(run)}")
        if run.scenario == "offline" and run.process == 0:
            tokens = f", {number(run.tokens_per_s)} tokens/s" if run.tokens_per_s else ""
            notes.append(f"Offline: {number(run.qps)} prompts/s{tokens} ({_verdict(run)})")
    if served.scenario == "server":
        notes.append(_server(served))
    return notes


def token_percentiles(run: ServedRun) -> str:
    """'TTFT p50/p90/p99 12.0/15.0/2,100 ms, TPOT 3.10/3.40/4.00 ms' (LoadGen's)."""

    def three(p50: float | None, p90: float | None, p99: float | None) -> str:
        if p50 is None or p90 is None or p99 is None:
            return "not reported"
        return f"{number(p50)}/{number(p90)}/{number(p99)} ms"

    ttft = three(run.ttft_p50_ms, run.ttft_p90_ms, run.ttft_p99_ms)
    tpot = three(run.tpot_p50_ms, run.tpot_p90_ms, run.tpot_p99_ms)
    return f"TTFT p50/p90/p99 {ttft}, TPOT {tpot}"


def _server(served: Served) -> str:
    bounds = f"TTFT p99 <= {served.ttft_bound_ms:g} ms and TPOT p99 <= {served.tpot_bound_ms:g} ms"
    searched, took = server_runs(served)
    best = highest_valid(searched)
    if served.server_qps is None or best is None:
        return f"Server at {bounds}: none ({served.why_none}); {took}"
    said = f"Server: {number(served.server_qps)} QPS at {bounds} ({_verdict(best)}"
    said += f"; {token_percentiles(best)})"
    failed = [r for r in searched if not r.valid]
    if served.failed_above is not None and failed:
        lowest = min(failed, key=lambda r: r.target_qps)
        said += f", {number(served.failed_above)} failed ({_verdict(lowest)})"
    if served.server_to_offline is not None:
        said += f"; {served.server_to_offline:.2f} of Offline's prompts/s"
    return f"{said}; {took}"


def _verdict(run: ServedRun) -> str:
    """'LoadGen VALID', or 'LoadGen INVALID: <its reasons, else its failed checks>'."""
    if run.valid:
        return "LoadGen VALID"
    why = "; ".join(run.reasons) or ", ".join(run.failed) or "see its summary"
    return f"LoadGen INVALID: {why}"
