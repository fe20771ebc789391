"""accelbench: how fast a PyTorch model trains on every device you have, measured honestly.

The public API is re-exported here. Names load on first use, so `import accelbench` (and the
`accelbench --help` that imports it) does not pay for importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "AccelbenchError": "errors",
    "Device": "devices",
    "discover": "devices",
    "pick_device": "devices",
    "resolve_devices": "devices",
    "Measurement": "stats",
    "measure": "measure",
    "Result": "results",
    "RunSpec": "results",
    "run_one": "runner",
    "run_config": "runner",
    "make_spec": "runner",
    "StopRule": "measure",
    "Store": "store",
    "track": "track",
    "Workload": "workloads",
    "get_workload": "workloads",
    "list_workloads": "workloads",
    "register": "workloads",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'accelbench' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)


if TYPE_CHECKING:  # let type checkers and editors see the real names
    from .devices import Device, discover, pick_device, resolve_devices
    from .errors import AccelbenchError
    from .measure import StopRule, measure
    from .results import Result, RunSpec
    from .runner import make_spec, run_config, run_one
    from .stats import Measurement
    from .store import Store
    from .track import track
    from .workloads import Workload, get_workload, list_workloads, register
