"""The sentences below a run table for a served configuration (mode serve): the batcher's
settings and how the auto ones were chosen, and what the Server search found."""

from __future__ import annotations

from collections import Counter
from statistics import geometric_mean

from ...modes.serve import Served, ServedRun
from ..text import number
from .server_runs import highest_valid, server_runs

__all__ = ["serve_notes"]


def serve_notes(served: Served, bound_ms: float | None) -> list[str]:
    notes = [batching_note(served)] if served.max_batch is not None else []
    if served.ttft_bound_ms is not None:  # a language model's: its bounds are on tokens
        from .serve_lm_notes import token_notes

        return notes + token_notes(served)
    if served.scenario == "server" and bound_ms is not None:
        notes.append(server_note(served, bound_ms))
    return notes


def batching_note(served: Served) -> str:
    """'batches of at most 48 (auto: ...) and a wait of 0.5 ms (auto: the bound / 20)'."""
    assert served.max_batch is not None and served.wait_ms is not None
    most = f"batches of at most {served.max_batch}"
    if "max_batch" in served.auto and served.service_budget_ms is not None:
        most += f" ({_why_max_batch(served)})"
    if len(set(served.max_batches)) > 1:
        chose = ", ".join(str(n) for n in served.max_batches)
        most += f"; the first process's: the processes' were {chose}"
    wait = f"a wait of {served.wait_ms:.3g} ms"
    if "batch_wait_ms" in served.auto:
        wait += f" (auto: {_bound(served)} / 20)"
    return f"served with {most} and {wait}"


def _why_max_batch(served: Served) -> str:
    """How the auto max batch was chosen, from the candidates' warm times."""
    budget = served.service_budget_ms
    assert budget is not None and served.max_batch is not None
    within = f"({_bound(served).removeprefix('the ')} - wait) / 2.5 = {budget:.3g} ms"
    timed = dict(sorted((int(size), ms) for size, ms in served.service_ms.items()))
    chosen = timed.get(served.max_batch)
    if chosen is None:
        return "auto"
    if chosen > budget:
        return f"auto: even a batch of {served.max_batch} took {chosen:.3g} ms, over {within}"
    said = f"auto: a warm batch of {served.max_batch} took {chosen:.3g} ms, within {within}"
    over = [(size, ms) for size, ms in timed.items() if ms > budget]
    if over:
        said += f"; {over[0][0]} took {over[0][1]:.3g} ms"
    return said


def _bound(served: Served) -> str:
    """The bound the auto settings come from: a language model's is its TTFT bound."""
    return "the bound" if served.ttft_bound_ms is None else "the TTFT bound"


def server_note(served: Served, bound_ms: float) -> str:
    """The Server search: QPS at the bound (or why none), the ratio, the batches formed."""
    if served.processes > 1:
        return _per_process(served, bound_ms)
    searched, took = server_runs(served)
    best = highest_valid(searched)
    if served.server_qps is None or best is None:
        return f"Server at p99 <= {bound_ms:g} ms: none ({served.why_none}); {took}"
    said = (
        f"Server: {number(served.server_qps)} QPS at p99 <= {bound_ms:g} ms "
        f"(LoadGen VALID, p99 {best.p99_ms:.3g} ms)"
    )
    if served.failed_above is not None:
        said += f", {number(served.failed_above)} failed"
    if served.server_to_offline is not None:
        said += f"; {served.server_to_offline:.2f} of Offline"
    return f"{said}; {took}; batches formed there: {formed(best)}"


def _per_process(served: Served, bound_ms: float) -> str:
    """Each process's highest VALID Server target and its ratio to the same process's Offline
    throughput, from its own runs; the ratio of their geometric means."""
    best = [_best_server(served, process) for process in range(served.processes)]
    offline = [_offline_qps(served, process) for process in range(served.processes)]
    figures = ", ".join(number(run.target_qps) if run else "none" for run in best)
    searched = sum(r.scenario == "server" for r in served.runs)
    said = f"Server at p99 <= {bound_ms:g} ms, each process's highest target LoadGen judged "
    said += f"VALID: {figures} QPS ({searched} Server runs in all)"
    pairs = [(run.target_qps, qps) for run, qps in zip(best, offline, strict=True) if run and qps]
    if len(pairs) == len(best):
        ratios = ", ".join(f"{server / qps:.2f}" for server, qps in pairs)
        overall = geometric_mean([s for s, _ in pairs]) / geometric_mean([q for _, q in pairs])
        said += f"; of the same process's Offline: {ratios} ({overall:.2f} from the geometric "
        said += "means)"
    batches = "; ".join(formed(run) if run else "none" for run in best)
    return f"{said}; batches formed at each one's highest VALID target: {batches}"


def _best_server(served: Served, process: int) -> ServedRun | None:
    searched = [r for r in served.runs if r.process == process and r.scenario == "server"]
    return highest_valid(searched)


def _offline_qps(served: Served, process: int) -> float | None:
    """The process's last Offline run's throughput (a repeated one replaces the first)."""
    runs = [r.qps for r in served.runs if r.process == process and r.scenario == "offline"]
    return runs[-1] if runs else None


def formed(run: ServedRun) -> str:
    """'sizes 18-48, most often 32 (41 of 300)'."""
    counts = Counter({int(size): n for size, n in run.batches.items()})
    if not counts:
        return "none"
    size, n = counts.most_common(1)[0]
    return f"sizes {min(counts)}-{max(counts)}, most often {size} ({n} of {sum(counts.values())})"
