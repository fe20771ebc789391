"""Core ML as a benchmark backend, on macOS: the workload converted to an ML program as
`accelbench export --to coreml` converts it, compiled once, loaded for one compute-unit setting,
warmed up, and timed on `predict`.

Each compute-unit setting is a backend of its own ("coreml-all", "coreml-cpu-and-ne",
"coreml-cpu-and-gpu", "coreml-cpu-only"), so each is a row. `compute_units` only allows units:
Core ML places the operators itself, so where the compute plan can be read (macOS 14.4+) the
result counts the operators it puts on each unit ("the Neural Engine ran 0 of 48"). Loading
compiles the model for the device (minutes for a large one): it is timed apart (`load_s`), and
the compiled model (.mlmodelc) is kept on disk for the other settings and runs of the sweep.

Written from coremltools' documented API (ct.convert, models.utils.compile_model,
models.CompiledMLModel, models.compute_plan.MLComputePlan); prediction needs macOS and no Mac
was at hand, so this path has not been executed by accelbench's developers: the tests drive it
with a fake coremltools, and off macOS every configuration is stored as unsupported.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..analysis.facts import COREML, LOAD_S
from ..core.modes import mode_of
from ..core.result import RunSpec
from ..core.version import __version__
from ..core.vocab import COREML as BACKEND
from ..devices import Device, HostTimer, MemoryReading, Timer
from ..errors import one_line, require
from ..exporters.common import several_inputs_refusal
from ..exporters.coreml import COMPUTE_UNITS, convert
from ..levers import Variant, active_levers
from ..workloads import Workload
from .base import Backend, Runnable, register

__all__ = ["BACKEND", "CoreML", "CoreMLPrepared", "backend_name", "cache_dir", "unsupported"]

PREFIX = f"{BACKEND}-"
PRECISIONS = ("fp32", "fp16")  # an ML program's compute precision
# The first predictions are slow (a cold start of 11 ms against 0.9 ms on average was reported
# for one model): these run, and are kept apart, before the measure's own warm-up.
FIRST_PREDICTIONS = 3
CACHE = "ACCELBENCH_COREML_CACHE"  # where compiled models are kept (default: the temp dir)
_DEVICE_UNITS = {  # coremltools.models.compute_device's classes -> the unit's name
    "MLCPUComputeDevice": "CPU",
    "MLGPUComputeDevice": "GPU",
    "MLNeuralEngineComputeDevice": "Neural Engine",
}
TIMING = "predict on host arrays: inputs in and outputs out included; load timed apart"


def backend_name(units: str) -> str:
    """'CPU_AND_NE' -> 'coreml-cpu-and-ne'."""
    return PREFIX + units.lower().replace("_", "-")


def units_of(backend: str) -> str | None:
    """The compute-unit setting a backend name stands for, or None."""
    return next((u for u in COMPUTE_UNITS if backend_name(u) == backend), None)


def unsupported(spec: RunSpec, device: Device) -> str | None:
    """Why Core ML cannot run this configuration here, or None."""
    if units_of(spec.backend) is None:
        names = ", ".join(backend_name(u) for u in COMPUTE_UNITS)
        return f"unknown Core ML backend {spec.backend!r}; valid: {names}"
    if sys.platform != "darwin":
        return "Core ML prediction needs macOS (coremltools converts models anywhere)"
    if not device.hosts_coreml:
        return (
            "Core ML runs on the Mac's CPU, GPU and Neural Engine as it chooses: its rows are "
            f"measured on the mps device, not {device.name}"
        )
    if not mode_of(spec).forward_only:
        return f"Core ML is benchmarked for inference; mode {spec.mode} runs on the torch backend"
    for lever in active_levers(spec):
        if lever.torch_only:
            return f"{lever.title} is a PyTorch option; Core ML optimizes the model itself"
    if spec.precision not in PRECISIONS:
        return f"an ML program computes in fp16 or fp32, not {spec.precision}"
    return None


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE) or tempfile.gettempdir()) / "accelbench-coreml"


@dataclass
class CoreMLPrepared:
    """A loaded model ready to time: what `block_function` and the runner need."""

    spec: RunSpec
    step: Callable[[], None]
    outputs: Callable[[], torch.Tensor]  # the outputs on the benchmark's batch, on the CPU
    info: dict[str, Any] = field(default_factory=dict)  # lands in the Result's metrics

    def timer(self) -> Timer:
        return HostTimer(lambda: None)  # predict returns with its outputs on the host

    def peak_memory(self) -> MemoryReading:
        return MemoryReading(None, "not measured: Core ML allocates outside PyTorch")


def build_model(spec: RunSpec, workload: Workload, device: Device) -> CoreMLPrepared:
    """Convert (or take from the cache) and compile, then load and warm up for the spec's
    compute units; the load is timed apart from everything else."""
    ct = require_coremltools()
    units = units_of(spec.backend)
    assert units is not None, unsupported(spec, device)
    from ..exporters.common import exportable

    # fp32 weights whatever the precision: Core ML lowers them itself to compute in fp16
    exported = replace(
        exportable(workload, "fp32", spec.batch_size, False), precision=spec.precision
    )
    compiled, input_name, how = compiled_model(ct, exported, spec)
    started = time.perf_counter()
    model = ct.models.CompiledMLModel(str(compiled), compute_units=getattr(ct.ComputeUnit, units))
    load_s = time.perf_counter() - started
    feed = {input_name: exported.example.numpy()}
    first = [_timed(lambda: model.predict(feed)) for _ in range(FIRST_PREDICTIONS)]
    facts = {
        "version": ct.__version__,
        "compute_units": units,
        "compute_precision": spec.precision,
        "compiled": how,
        "first_predictions_s": first,
        "timing": TIMING,
        **operators_per_unit(ct, compiled, units),
    }

    def step() -> None:
        model.predict(feed)

    def outputs() -> torch.Tensor:
        return torch.from_numpy(np.asarray(next(iter(model.predict(feed).values())))).float()

    return CoreMLPrepared(spec, step, outputs, {COREML: facts, LOAD_S: load_s})


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def compiled_model(ct: Any, exported: Any, spec: RunSpec) -> tuple[Path, str, str]:
    """The compiled model (.mlmodelc) for this model, precision and batch, its input's name,
    and whether it was compiled now or found in the cache. Every compute-unit setting loads
    the same compiled model, so a sweep converts and compiles it once."""
    entry = cache_dir() / _cache_key(ct, exported)
    compiled, meta = entry / "model.mlmodelc", entry / "input.json"
    if compiled.is_dir() and meta.is_file():
        return compiled, json.loads(meta.read_text())["name"], "compiled model from the cache"
    started = time.perf_counter()
    converted = convert(ct, exported, exported.module, "ALL", load=False)
    name = converted.get_spec().description.input[0].name
    entry.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=entry.name + ".", dir=entry.parent))
    try:
        converted.save(str(partial / "model.mlpackage"))
        ct.models.utils.compile_model(
            str(partial / "model.mlpackage"), str(partial / compiled.name)
        )
        (partial / meta.name).write_text(json.dumps({"name": name}))
        with contextlib.suppress(OSError):  # another configuration may have finished first
            partial.rename(entry)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    seconds = time.perf_counter() - started
    return compiled, name, f"converted and compiled for this run in {seconds:.1f} s"


def _cache_key(ct: Any, exported: Any) -> str:
    """What makes the compiled model: the weights, the input's shape, the precision, and the
    versions that convert it."""
    digest = hashlib.sha256()
    versions = [exported.name, exported.precision, str(tuple(exported.example.shape))]
    versions += [str(exported.example.dtype), ct.__version__, torch.__version__, __version__]
    digest.update("|".join(versions).encode())
    for tensor in exported.module.state_dict().values():
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()[:16]


def operators_per_unit(ct: Any, compiled: Path, units: str) -> dict[str, Any]:
    """How many of the main function's operators (constants left out) the compute plan puts
    on each unit, or why there is no plan (it needs macOS 14.4 and coremltools 8.1)."""
    plan_type = getattr(getattr(ct.models, "compute_plan", None), "MLComputePlan", None)
    if plan_type is None:
        return {"plan_unavailable": f"coremltools {ct.__version__} has no compute plan"}
    try:
        plan = plan_type.load_from_path(
            path=str(compiled), compute_units=getattr(ct.ComputeUnit, units)
        )
        program = plan.model_structure.program
        if program is None:
            return {"plan_unavailable": "the model is not an ML program"}
        operations = program.functions["main"].block.operations
        counted = [op for op in operations if op.operator_name != "const"]
        usage = plan.get_compute_device_usage_for_mlprogram_operation
        per_unit = Counter(_unit(usage(op)) for op in counted)
    except Exception as exc:  # an older macOS, say: the measurement does not need the plan
        return {"plan_unavailable": f"the compute plan could not be read: {one_line(exc)}"}
    return {"operators": len(counted), "per_unit": dict(per_unit)}


def _unit(usage: Any) -> str:
    if usage is None:
        return "undetermined"
    kind = type(usage.preferred_compute_device).__name__
    return _DEVICE_UNITS.get(kind, kind)


def require_coremltools() -> Any:
    """coremltools, or one line saying how to install it."""
    return require("coremltools", "export", "Core ML")


@register
class CoreML(Backend):
    """Inference on the converted model, one backend per compute-unit setting."""

    name = BACKEND
    checks_drift = True  # fp16 compute and a converted graph: every result carries its drift
    not_profiled = (
        "Core ML runs outside PyTorch's profiler (Xcode's Instruments profiles it; the result "
        "counts the compute plan's operators per unit)"
    )

    def expand(self, device: Device) -> list[str]:
        # Every device gets the four rows; `unsupported` says why off the Mac's mps device.
        return [backend_name(u) for u in COMPUTE_UNITS]

    def owns(self, backend: str) -> bool:
        return backend.startswith(PREFIX)

    def check_installed(self) -> None:
        # Found, not imported: importing coremltools takes seconds and prints warnings, and
        # off macOS every configuration is unsupported before anything is built.
        if importlib.util.find_spec("coremltools") is None:
            require_coremltools()  # raises the one line naming what to install

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        return several_inputs_refusal(workload) or unsupported(spec, device)

    def build(self, spec: RunSpec, workload: Workload, device: Device, seed: int = 0) -> Runnable:
        return build_model(spec, workload, device)

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        """On the Mac's device (where Core ML rows are filed): the switch to Core ML in fp32
        with every compute unit allowed, a variant of its own, and fp16 compute judged against
        it, so that the switch's gain is not credited to fp16. Both alone only."""
        if not mode_of(base).forward_only or not device.hosts_coreml:
            return []
        backend = backend_name(COMPUTE_UNITS[0])  # ALL: Core ML places each operator
        fp32 = replace(base, precision="fp32", backend=backend)
        fp16 = replace(fp32, precision="fp16")
        return [
            Variant(f"{backend} fp32", fp32, "backend", late=True),
            Variant(f"{backend} fp16", fp16, "backend", late=True, over=fp32),
        ]

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        units = units_of(spec.backend) or "ALL"
        precision = "FLOAT16" if spec.precision == "fp16" else "FLOAT32"
        return [
            "program = torch.export.export(model.eval(), (example,)).run_decompositions({})",
            f'mlmodel = ct.convert(program, convert_to="mlprogram", '
            f"compute_precision=ct.precision.{precision})",
            'mlmodel.save("model.mlpackage")',
            'compiled = ct.models.utils.compile_model("model.mlpackage", "model.mlmodelc")',
            f"model = ct.models.CompiledMLModel(compiled, compute_units=ct.ComputeUnit.{units})",
            "model.predict({name: example.numpy()})  # warm up before timing: the first are slow",
        ]
