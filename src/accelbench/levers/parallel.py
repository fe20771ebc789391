"""Data parallelism: DistributedDataParallel over the processes torch.distributed started.

Its value is the world size; the engine launches that many ranks (`RunSpec.processes`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.modes import mode_of
from ..core.result import RunSpec, Value
from .base import Lever, Prepared, register
from .threads import positive_count

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload


@register
class DataParallel(Lever):
    name = "processes"
    title = "data parallelism"
    option = "--nproc-per-node"
    help = (
        "training processes per node, one device each: NCCL on CUDA, gloo on the CPU; 1 is "
        "always measured too, for the scaling efficiency (default: 1)"
    )
    group_title = "data parallelism (torch.distributed, DDP)"
    default = 1
    stage = 40  # after the layout, before compile (PyTorch compiles the DDP module)

    def parse(self, word: str) -> Value:
        return positive_count(word)

    def check(self, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"processes must be 1 or more, not {value!r}")

    def sweep_values(self, values: tuple[Value, ...], nodes: int = 1) -> tuple[Value, ...]:
        # the world size counts every node's processes; one process is the scaling baseline
        return tuple(sorted({1, *(int(v) * nodes for v in values)}))

    def label(self, value: Value) -> str:
        return f"x{value} processes"

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        reason = device.dist_unsupported()  # the device says why (MPS: no collectives)
        if reason:
            return reason
        if not mode_of(spec).trains:
            return "data parallelism exchanges gradients: it applies to training only"
        if spec.lever("cuda_graphs", False):
            return "CUDA graphs are not combined with DistributedDataParallel here"
        return None

    def apply_model(self, prep: Prepared, value: Value) -> None:
        from torch.nn.parallel import DistributedDataParallel

        ids = prep.device.ddp_device_ids()
        prep.model = DistributedDataParallel(prep.model, device_ids=ids)

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        return [
            f"# torchrun --nproc-per-node {self.value(spec)} your_script.py, and in it:",
            "model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])",
        ]
