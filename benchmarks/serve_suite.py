"""Serving under MLPerf LoadGen (issue 35 part 2): SingleStream, Offline and the Server search
at a p99 bound, per configuration, each served in a worker (engine/serve_worker).

    python3 benchmarks/serve_suite.py cpu  OUTDIR     seed-cnn fp32 on this CPU
    python3 benchmarks/serve_suite.py h200 OUTDIR     resnet50 bf16 channels_last and seed-cnn,
                                                      eager and with CUDA graphs per batch size,
                                                      and resnet50 with LoadGen in its process
    python3 benchmarks/serve_suite.py ab15 OUTDIR     resnet50 with CUDA graphs at p99 <= 15 ms,
                                                      LoadGen apart, then in the model's process

Writes OUTDIR/serve_SUITE.txt (one block a configuration), serve_SUITE.json (every figure)
and serve_SUITE_summaries.txt (LoadGen's own summary of every run).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from accelbench.backends.serving import ScenarioRun, ServeReport, ServeSettings  # noqa: E402
from accelbench.core.result import RunSpec  # noqa: E402
from accelbench.engine.serve_worker import serve_isolated  # noqa: E402
from accelbench.levers import spec_with  # noqa: E402
from accelbench.workloads import WorkloadRef  # noqa: E402

BOUND_S = 0.010


def _spec(workload: str, device: str, precision: str, **levers: Any) -> RunSpec:
    spec = RunSpec(workload, device, 64, 1, mode="infer", precision=precision)  # type: ignore[arg-type]
    return spec_with(spec, **levers)


SEPARATE = ServeSettings(latency_bound_s=BOUND_S)
# LoadGen's callbacks in the model's process: what its process of its own buys (a shorter
# search budget: at low targets each run lasts 1,024 arrivals)
IN_PROCESS = ServeSettings(latency_bound_s=BOUND_S, loadgen_in_process=True, search_budget_s=60)
RESNET = _spec("resnet50", "cuda", "bf16", channels_last=True)
SUITES = {
    "cpu": [
        (_spec("seed-cnn", "cpu", "fp32"), SEPARATE),
        (_spec("seed-cnn", "cpu", "fp32", threads=1), SEPARATE),
        # a bound this shared 2-core host can meet, to show the search on it
        (_spec("seed-cnn", "cpu", "fp32", threads=1), ServeSettings(latency_bound_s=0.050)),
    ],
    "h200": [
        (_spec("resnet50", "cuda", "bf16", channels_last=True, cuda_graphs=True), SEPARATE),
        (RESNET, SEPARATE),
        (_spec("seed-cnn", "cuda", "fp32"), SEPARATE),
        (_spec("seed-cnn", "cuda", "fp32", cuda_graphs=True), SEPARATE),
        (RESNET, IN_PROCESS),
    ],
    # what LoadGen's process of its own buys, at a bound both ways can meet
    "ab15": [
        (_spec("resnet50", "cuda", "bf16", channels_last=True, cuda_graphs=True), settings)
        for settings in (
            ServeSettings(latency_bound_s=0.015),
            ServeSettings(latency_bound_s=0.015, loadgen_in_process=True),
        )
    ],
}


def _run_line(name: str, run: ScenarioRun) -> str:
    r = run.result
    verdict = "VALID" if r.valid else f"INVALID ({', '.join(r.failed) or 'see summary'})"
    p = {k: f"{v * 1e3:.3g}" for k, v in r.latency_s.items()}
    return (
        f"  {name:<12} target {r.target_qps:9.1f}  done {r.qps:9.1f}/s  p50 {p['50.00']} "
        f"p90 {p['90.00']} p99 {p['99.00']} ms  {r.samples} samples, {r.late} late  {verdict}"
        f"\n  {'':<12} batches formed (size: count): {run.batches}"
    )


def _block(spec: RunSpec, report: ServeReport, wall_s: float) -> str:
    where = "in the model's process" if report.settings.loadgen_in_process else "own process"
    lines = [
        f"{spec.workload} {spec.device} {spec.precision} {dict(spec.levers)}, LoadGen: {where}"
    ]
    lines += [_run_line(name, run) for name, run in report.runs.items()]
    search = report.server
    if search is not None:
        lines += [_run_line("server try", run) for run in search.tried]
        ratio = report.server_to_offline
        qps = f"{search.qps:.1f} QPS" if search.qps is not None else f"none: {search.why_none}"
        lines.append(
            f"  Server at p99 <= {search.bound_s * 1e3:g} ms: {qps}; lowest failed target "
            f"{search.failed_above}; Server/Offline "
            f"{'undetermined' if ratio is None else f'{ratio:.2f}'}; "
            f"search {search.elapsed_s:.1f} s, {len(search.tried)} runs"
        )
    lines.append(
        f"  wall time of the configuration (worker start, warm-up, all runs): {wall_s:.1f} s"
    )
    return "\n".join(lines)


def _summaries(report: ServeReport) -> str:
    runs = [*report.runs.values(), *(report.server.tried if report.server else ())]
    return "\n".join(run.result.summary for run in runs)


def main() -> None:
    suite, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    texts, records, summaries = [], [], []
    for spec, settings in SUITES[suite]:
        begun = time.monotonic()
        try:
            report = serve_isolated(spec, WorkloadRef(spec.workload), settings, timeout=200)
        except Exception as exc:  # one configuration's failure is its line; the others go on
            texts.append(f"{spec}: {type(exc).__name__}: {exc}")
            print(texts[-1], flush=True)
            continue
        texts.append(_block(spec, report, time.monotonic() - begun))
        print(texts[-1], flush=True)
        records.append({"spec": spec.to_dict(), "report": dataclasses.asdict(report)})
        summaries.append(f"##### {spec}\n{_summaries(report)}")
        (out / f"serve_{suite}.txt").write_text("\n\n".join(texts) + "\n")
        (out / f"serve_{suite}.json").write_text(json.dumps(records, indent=1, default=str))
        (out / f"serve_{suite}_summaries.txt").write_text("\n".join(summaries))


if __name__ == "__main__":
    main()
