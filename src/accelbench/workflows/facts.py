"""What the workflows record of a result, as typed values stored in `Result.metrics`
(core/facts): optimize's tag on each variant of its ladder (workflows/optimize_plan),
torch-free for the renderers of stored results.

Importing this module registers every fact the package defines, since the modules below register
theirs when imported: what reads stored results (the command line's `read_store`, `results
import`) imports it, so that every row is checked whole (a plugin's facts load with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..analysis import explanation, trust, verdict  # noqa: F401  (each registers its facts)
from ..analysis import facts as analysis_facts  # noqa: F401
from ..core.facts import Fact, fact
from ..devices import power, state  # noqa: F401
from ..engine import facts as engine_facts  # noqa: F401

OPTIMIZE = "optimize"


@fact(OPTIMIZE)
@dataclass(frozen=True)
class OptimizeTag(Fact):
    """Marks a result as one variant of an `accelbench optimize` ladder (`optimize`)."""

    variant: str  # the rung's name, e.g. "fp32 eager"
    tolerance: Mapping[str, float] | None = None  # the ladder's Tolerance fields, as stored
