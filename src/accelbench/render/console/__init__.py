"""Console tables, one module per thing shown; each renderer returns text and the CLI prints it.

`stored` (results, compare) imports no torch; `listings`, `export`, `optimize` name torch-side
types for the type checker only, and `optimize` imports the optimize workflow when it renders.
"""

from ..text import format_bytes, format_seconds
from .explain import explanation_blocks
from .export import export_table
from .history import history_table
from .listings import calibration_table, devices_table, workloads_table
from .optimize import optimize_table
from .run import run_tables
from .run_notes import drift_note
from .stored import changes_table, compare_table, results_table
from .verify import verify_table

__all__ = [
    "calibration_table",
    "changes_table",
    "compare_table",
    "devices_table",
    "drift_note",
    "explanation_blocks",
    "export_table",
    "format_bytes",
    "format_seconds",
    "history_table",
    "optimize_table",
    "results_table",
    "run_tables",
    "verify_table",
    "workloads_table",
]
