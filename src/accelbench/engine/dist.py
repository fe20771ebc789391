"""Data-parallel training over torch.distributed, launched by PyTorch's own elastic launcher.

Each configuration with `processes` > 1 runs as one elastic launch (what `torchrun` does): N
processes per node, each with its device (the next GPU, or the shared CPU), the device's backend
(NCCL on CUDA, gloo on the CPU), and the model in DistributedDataParallel. Every rank times its
blocks with the same engine and statistics as a single process; DDP's gradient all-reduce keeps
the ranks in step, so rank 0's it/s is the whole group's, and an it processes every rank's batch.
A rank that fails ends the launch: the launcher stops the others, and its message becomes the
result's error. This runs inside accelbench's worker process, whose time limit covers the launch.
"""

from __future__ import annotations

import datetime
import os
import uuid
from dataclasses import dataclass, replace
from typing import Any

from ..core.result import Result, RunSpec
from ..workloads import WorkloadRef
from .facts import RANKS, WORLD_SIZE
from .measure import StopRule

__all__ = ["Launch", "run_data_parallel"]


@dataclass(frozen=True)
class Launch:
    """Where the processes run: this node alone, or several meeting at a rendezvous endpoint."""

    nodes: int = 1
    node_rank: int = 0
    endpoint: str = ""  # HOST:PORT of the rendezvous, needed for more than one node
    timeout: float = 900.0

    @property
    def endpoint_or_local(self) -> str:
        return self.endpoint or "127.0.0.1:0"  # port 0: pick a free one, single node only


def run_data_parallel(spec: RunSpec, ref: WorkloadRef, stop: StopRule, launch: Launch) -> Result:
    """Launch `spec.processes` ranks over `launch.nodes` nodes; rank 0's Result, with every
    rank's figures in its metrics. A failed rank gives an "error" Result naming it."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    per_node = spec.processes // launch.nodes
    config = LaunchConfig(
        min_nodes=launch.nodes,
        max_nodes=launch.nodes,
        nproc_per_node=per_node,
        run_id=f"accelbench-{uuid.uuid4().hex[:8]}",
        rdzv_backend="c10d",
        rdzv_endpoint=launch.endpoint_or_local,
        rdzv_configs={"rank": launch.node_rank} if launch.nodes > 1 else {},
        max_restarts=0,  # a failure is a result, not something to retry
        monitor_interval=0.1,
        start_method="spawn",
    )
    try:
        returned = elastic_launch(config, _rank_main)(spec, ref, stop, launch.timeout)
    except ChildFailedError as exc:
        rank, failure = exc.get_first_failure()
        message = failure.message if isinstance(failure.message, str) else str(failure.message)
        return Result(spec=spec, status="error", error=f"rank {rank} failed: {message}")
    result = returned.get(0)
    if not isinstance(result, Result):  # another node holds global rank 0 and stores the result
        return Result(
            spec=spec,
            status="error",
            error=f"node {launch.node_rank} ran ranks {sorted(returned)}; rank 0 "
            "ran elsewhere and stores the result there",
        )
    return result


def _rank_main(spec: RunSpec, ref: WorkloadRef, stop: StopRule, timeout: float) -> Result | None:
    """One rank: its device, the process group, the same measurement as a single process."""
    import torch.distributed as dist

    from ..devices import resolve_devices
    from ..workloads import load_workload
    from .runner import run_config

    base = resolve_devices(spec.device)[0]
    device = base.for_rank(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group(base.dist_backend, timeout=datetime.timedelta(seconds=timeout))
    try:
        result = run_config(spec, load_workload(ref), device, stop, probe=False)
        if result.status != "ok":  # fail loudly, so the launcher stops the other ranks
            raise RuntimeError(f"{result.status}: {result.error}")
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, _rank_figures(result, device.name))
    finally:
        dist.destroy_process_group()
    if int(os.environ["RANK"]) != 0:
        return None
    return replace(result, metrics={**result.metrics, RANKS: gathered, WORLD_SIZE: len(gathered)})


def _rank_figures(result: Result, device: str) -> dict[str, Any]:
    m = result.measurement
    assert m is not None
    return {
        "rank": int(os.environ["RANK"]),
        "device": device,
        "it_per_s": m.rate.median,
        "samples_per_s": m.rate.median * result.spec.batch_size * result.spec.steps_per_block,
        "samples_s": list(m.samples),
        "peak_memory": result.peak_memory,
    }
