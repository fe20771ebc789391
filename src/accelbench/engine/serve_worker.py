"""One configuration served under LoadGen's load in a worker process (the user's code runs only
in workers): the model built with the configuration's levers on its device, warmed up at every
batch size the batcher may form, then `backends/serving`'s scenarios."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..backends.loadgen import loadgen
from ..backends.serving import ServeReport, ServeSettings, forward_batches, serve, warm_up
from ..core.modes import mode_of
from ..core.result import RunSpec
from ..errors import UsageError, WorkloadError
from ..workloads import WorkloadRef, load_workload
from .worker import call_isolated

__all__ = ["serve_isolated"]


@dataclass(frozen=True)
class _ServeJob:
    spec: RunSpec
    ref: WorkloadRef
    settings: ServeSettings


def serve_isolated(
    spec: RunSpec, ref: WorkloadRef, settings: ServeSettings, timeout: float
) -> ServeReport:
    """Serve `spec`'s model (an inference configuration; its batch size is replaced by
    `settings.max_batch`) in a worker, within `timeout` seconds. UsageError for a training
    configuration or a missing mlperf_loadgen; WorkloadError, in one line, for a worker that
    failed or ran out of time."""
    loadgen()  # missing: one line naming the extra, before any process starts
    if mode_of(spec).trains:
        raise UsageError(
            "serving answers inference queries: a training configuration has no answer to send"
        )
    plain = replace(spec, mode="infer", batch_size=settings.max_batch, mode_args=())
    job = _ServeJob(plain, ref, settings)
    called = call_isolated(_serve_in_worker, job, timeout)
    if called.status != "ok":
        raise WorkloadError(f"serving {spec.workload} on {spec.device}: {called.error}")
    report: ServeReport = called.value
    return report


def _serve_in_worker(job: _ServeJob, tell: Any) -> ServeReport:
    from ..backends.pytorch import build_torch
    from ..devices import resolve_devices

    workload = load_workload(job.ref)
    device = resolve_devices(job.spec.device)[0]
    with device.context():
        prep = build_torch(job.spec, workload, device)
        graphs = bool(job.spec.lever("cuda_graphs", False))
        work = forward_batches(prep, graphs)
        warm = warm_up(work.run, job.settings.max_batch)
        return serve(job.settings, work, warm)
