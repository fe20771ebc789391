"""Data parallelism: DistributedDataParallel over the processes torch.distributed started."""

from __future__ import annotations

from ..core.result import RunSpec
from ..devices import Device
from ..workloads import Workload
from .base import Prepared, Step, register


@register
class DataParallel(Step):
    name = "data_parallel"

    def wanted(self, spec: RunSpec) -> bool:
        return spec.processes > 1

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if device.dist_backend is None:
            return f"{device.kind} has no torch.distributed backend for data parallelism"
        if spec.mode != "train":
            return "data parallelism exchanges gradients: it applies to training only"
        if spec.cuda_graphs:
            return "CUDA graphs are not combined with DistributedDataParallel here"
        return None

    def apply_model(self, prep: Prepared) -> None:
        from torch.nn.parallel import DistributedDataParallel

        ids = prep.device.ddp_device_ids()
        prep.model = DistributedDataParallel(prep.model, device_ids=ids)
