"""What the workflows record of a result, as typed values stored in `Result.metrics`
(core/facts): optimize's tag on each variant of its ladder (workflows/optimize_plan) and
verify's record (workflows/verify), torch-free for the renderers of stored results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..core.facts import Fact, fact

OPTIMIZE = "optimize"


@fact(OPTIMIZE)
@dataclass(frozen=True)
class OptimizeTag(Fact):
    """Marks a result as one variant of an `accelbench optimize` ladder (`optimize`)."""

    variant: str  # the rung's name, e.g. "fp32 eager"
    tolerance: Mapping[str, float] | None = None  # the ladder's Tolerance fields, as stored
