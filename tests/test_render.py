"""Renderers: every row fits its header, and the figures shown are the stored ones."""

import re

from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.devices import discover
from accelbench.render.console import devices_table, format_bytes, results_table, run_tables


def _result(device="cpu", status="ok", samples=(0.5,) * 8, metrics=None):
    return Result(
        spec=RunSpec("seed-cnn", device, 64, 20, precision="bf16"),
        status=status,
        measurement=Measurement(samples, (1.0,)) if status == "ok" else None,
        error="" if status == "ok" else "CUDA out of memory",
        peak_memory=2**30,
        peak_memory_meaning="peak RSS",
        environment={"device_model": "Test CPU", "host": "h"},
        metrics=metrics or {},
        id=7,
    )


def _header_cells(text):
    header = next(line for line in text.splitlines() if line.startswith("┃"))
    return [cell.strip() for cell in header.strip("┃").split("┃")]


def test_run_table_headers_have_no_blank_columns_and_show_the_figures():
    metrics = {
        "achieved_flops": 2.5e12,
        "mfu": 0.125,
        "verdict": {"kind": "launch-bound", "explanation": "launch-bound: because"},
    }
    text = run_tables([_result(metrics=metrics), _result("cuda:0", status="oom")], width=250)
    assert "" not in _header_cells(text)
    assert "2.00" in text  # 1 / 0.5 s = 2 it/s
    assert "2.50" in text and "12.5%" in text  # TFLOP/s and MFU
    assert "train bf16 b64" in text
    assert "OOM" in text and "oom: CUDA out of memory" in text
    assert "launch-bound: because" in text


def test_results_table_headers_match_the_cells():
    text = results_table([_result()], width=250)
    cells = _header_cells(text)
    assert "" not in cells and "configuration" in cells
    row = next(line for line in text.splitlines() if line.startswith("│ 7"))
    assert len(row.strip("│").split("│")) == len(cells)


def test_devices_table_lists_every_backend():
    text = devices_table(discover())
    assert all(re.search(rf"│ {kind}", text) for kind in ("cpu", "mps", "xpu"))


def test_format_bytes():
    assert format_bytes(None) == "—"
    assert format_bytes(512) == "512 B"
    assert format_bytes(3 * 2**30) == "3.0 GiB"
