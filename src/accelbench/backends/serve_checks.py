"""What both serving paths' settings share (backends/serving's ServeSettings, backends/serving_lm's
TokenSettings): the checks they make as they are made, each a UsageError in one line naming
what is valid, and the order their scenarios run in."""

from __future__ import annotations

import math
from typing import Protocol

from ..errors import UsageError

__all__ = ["check_settings", "scenario_runs"]

_SECONDS = ("duration_s", "search_budget_s")  # besides each path's own bounds
_COUNTS = ("max_batch", "min_queries", "search_steps")


class Settings(Protocol):
    """The fields both settings have that are checked by name or read here."""

    @property
    def scenarios(self) -> tuple[str, ...]: ...

    @property
    def wait_s(self) -> float: ...

    @property
    def server_qps(self) -> float | None: ...


def check_settings(
    settings: Settings, valid: tuple[str, ...], refused: str, bounds: tuple[str, ...]
) -> None:
    """Its scenarios among `valid` (`refused`: how one that is not is said, `{!r}` its name);
    its `bounds`, minimum duration and search budget finite seconds above 0; the Server target,
    where given, a finite QPS above 0; the wait 0 s or more; the counts whole and 1 or more."""
    unknown = [s for s in settings.scenarios if s not in valid]
    if unknown or not settings.scenarios:
        what = refused.format(unknown[0]) if unknown else "no scenario given"
        raise UsageError(f"{what}; valid: {', '.join(valid)}")
    for name in (*bounds, *_SECONDS):
        value = getattr(settings, name)
        if not _is_positive(value):
            raise UsageError(f"{name} must be a positive number of seconds, not {value!r}")
    if settings.server_qps is not None and not _is_positive(settings.server_qps):
        raise UsageError(f"the Server target must be a positive QPS, not {settings.server_qps!r}")
    if not (math.isfinite(settings.wait_s) and settings.wait_s >= 0):
        raise UsageError(f"the wait bound must be 0 s or more, not {settings.wait_s!r}")
    for name in _COUNTS:
        value = getattr(settings, name)
        if type(value) is not int or value < 1:
            raise UsageError(f"{name} must be a positive integer, not {value!r}")


def scenario_runs(scenarios: tuple[str, ...], order: tuple[str, ...]) -> tuple[str, ...]:
    """The scenarios to run, in `order`: Server's search needs SingleStream and Offline first."""
    wanted = set(scenarios)
    if "server" in wanted:
        wanted |= {"singlestream", "offline"}
    return tuple(s for s in order if s in wanted)


def _is_positive(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0
