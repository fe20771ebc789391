"""accelbench: how fast a PyTorch model trains on every device you have, measured honestly.

The public API is re-exported here. Names load on first use, so `import accelbench` (and the
`accelbench --help` that imports it) does not pay for importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import modes as _modes  # noqa: F401  (the built-in modes register, without torch)
from .core.version import __version__

# public name -> module that defines it ("module:name" where the name there differs)
_EXPORTS = {
    "AccelbenchError": "errors",
    "UsageError": "errors",
    "MissingDependency": "errors",
    "DeviceError": "errors",
    "WorkloadError": "errors",
    "StoreError": "errors",
    "optimize": "workflows.optimize_plan",
    "OptimizeRequest": "workflows.optimize_plan",
    "Searched": "workflows.optimize_plan",
    "Tolerance": "workflows.optimize",
    "recommend": "workflows.optimize",
    "verify": "workflows.verify",
    "VerifySettings": "workflows.verify:Settings",
    "VerifyRequest": "workflows.verify",
    "compare": "workflows.compare",
    "ModelOptions": "workloads.custom",
    "Filters": "store.db",
    "WorkloadRef": "workloads",
    "benchmark": "workflows.benchmark",
    "BenchmarkRequest": "workflows.benchmark",
    "explain": "workflows.explain",
    "export": "workflows.export",
    "calibrate": "workflows.calibrate",
    "CalibrateRequest": "workflows.calibrate",
    "Calibration": "workflows.calibrate",
    "ExportRequest": "workflows.export",
    "Exported": "workflows.export",
    "Explanation": "analysis.explanation",
    "Device": "devices",
    "discover": "devices",
    "pick_device": "devices",
    "resolve_devices": "devices",
    "Measurement": "core.stats",
    "measure": "engine.measure",
    "Result": "core.result",
    "RunSpec": "core.result",
    "run_one": "engine.runner",
    "run_config": "engine.runner",
    "make_spec": "engine.runner",
    "StopRule": "engine.measure",
    "Store": "store.db",
    "track": "engine.track",
    "Workload": "workloads",
    "get_workload": "workloads",
    "list_workloads": "workloads",
    "register": "workloads",
    "Lever": "levers",
    "Variant": "levers",
    "register_lever": "levers:register",
    "label": "levers",
    "find_dimension": "levers",
}

# spelled out, not derived from _EXPORTS, because type checkers read only a literal list to
# know what a package re-exports (tests/test_api.py checks the two agree)
__all__ = [
    "AccelbenchError",
    "BenchmarkRequest",
    "CalibrateRequest",
    "Calibration",
    "Device",
    "DeviceError",
    "Explanation",
    "ExportRequest",
    "Exported",
    "Filters",
    "Lever",
    "Measurement",
    "MissingDependency",
    "ModelOptions",
    "OptimizeRequest",
    "Result",
    "RunSpec",
    "Searched",
    "StopRule",
    "Store",
    "StoreError",
    "Tolerance",
    "UsageError",
    "Variant",
    "VerifyRequest",
    "VerifySettings",
    "Workload",
    "WorkloadError",
    "WorkloadRef",
    "__version__",
    "benchmark",
    "calibrate",
    "compare",
    "discover",
    "explain",
    "export",
    "find_dimension",
    "get_workload",
    "label",
    "list_workloads",
    "make_spec",
    "measure",
    "optimize",
    "pick_device",
    "recommend",
    "register",
    "register_lever",
    "resolve_devices",
    "run_config",
    "run_one",
    "track",
    "verify",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'accelbench' has no attribute {name!r}")
    module, _, attribute = _EXPORTS[name].partition(":")
    return getattr(importlib.import_module(f".{module}", __name__), attribute or name)


if TYPE_CHECKING:  # let type checkers and editors see the real names
    from .analysis.explanation import Explanation
    from .core.result import Result, RunSpec
    from .core.stats import Measurement
    from .devices import Device, discover, pick_device, resolve_devices
    from .engine.measure import StopRule, measure
    from .engine.runner import make_spec, run_config, run_one
    from .engine.track import track
    from .errors import (
        AccelbenchError,
        DeviceError,
        MissingDependency,
        StoreError,
        UsageError,
        WorkloadError,
    )
    from .levers import Lever, Variant, find_dimension, label
    from .levers import register as register_lever
    from .store.db import Filters, Store
    from .workflows.benchmark import BenchmarkRequest, benchmark
    from .workflows.calibrate import CalibrateRequest, Calibration, calibrate
    from .workflows.compare import compare
    from .workflows.explain import explain
    from .workflows.export import Exported, ExportRequest, export
    from .workflows.optimize import Tolerance, recommend
    from .workflows.optimize_plan import OptimizeRequest, Searched, optimize
    from .workflows.verify import Settings as VerifySettings
    from .workflows.verify import VerifyRequest, verify
    from .workloads import Workload, WorkloadRef, get_workload, list_workloads, register
    from .workloads.custom import ModelOptions
