"""Renderers: every row fits its header, and the figures shown are the stored ones."""

import re
import subprocess
import sys

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


def test_run_table_notes_say_what_the_metrics_hold():
    metrics = {
        "power": {"average_watts": 250.0, "joules": 100.0, "seconds": 0.4, "source": "NVML"},
        "joules_per_sample": 0.0123,
        "samples_per_s_per_watt": 3.5,
        "ranks": [{"rank": 0, "device": "cpu", "it_per_s": 1.5}],
        "world_size": 1,
        "scaling_unavailable": "the single-process run is missing",
        "max_batch": 512,
        "max_batch_probes": [[256, "ok"], [512, "ok"], [1024, "oom"]],
        "device_memory": 2**34,
        "drift": {
            "reference": "fp32",
            "max_rel_error": 0.0012,
            "top1_agreement": 0.99,
            "samples": 64,
        },
    }
    text = run_tables([_result(metrics=metrics)], width=400)
    assert "250 W on average, 0.0123 J per sample, 3.50 samples/s per watt (NVML)" in text
    assert (
        "rank 0 (cpu) 1.50 it/s; no scaling efficiency: the single-process run is missing" in text
    )
    assert (
        "largest batch that fits: 512 (device memory 16.0 GiB; tried 256 ok, 512 ok, 1024 oom)"
        in text
    )
    assert "max relative error 0.0012, top-1 agreement 99.0% of 64 samples" in text


def test_rendering_stored_results_imports_no_torch():
    code = (
        "import sys\n"
        "from accelbench.core.result import Result, RunSpec\n"
        "from accelbench.core.stats import Measurement\n"
        "from accelbench.analysis.compare import DEVICE, compare\n"
        "from accelbench.render import html_report, markdown_report\n"
        "from accelbench.render.console import compare_table, results_table\n"
        "rs = [Result(spec=RunSpec('mlp', d, 8, 1), status='ok', "
        "measurement=Measurement((0.1,) * 6)) for d in ('cpu', 'cuda:0')]\n"
        "text = results_table(rs) + compare_table(compare(rs, DEVICE))\n"
        "text += markdown_report(rs) + html_report(rs)\n"
        "assert 'img class=\"chart\"' in text\n"
        "print(sorted(m for m in ('torch', 'torchvision') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_probe_that_failed_in_one_process_does_not_say_there_is_no_verdict():
    # Issue 37 item 13: the first process's probe failed, the others' ran: the verdict counts
    # those (analysis/metrics), so "no verdict" would contradict the line above it.
    from accelbench.analysis.facts import Probe
    from accelbench.render.console.run_notes import derived_notes

    failed = {"probe_error": "RuntimeError: out of memory"}
    probe = Probe(25, 1e-3, 40, steps=(1e-3, 1e-3), growth=(1.02, 1.04)).to_metrics()
    spec, measured = RunSpec("mlp", "cpu", 100, 1), Measurement(samples=(4e-3,) * 6)
    alone = Result(spec=spec, status="ok", measurement=measured, metrics=failed)
    others = Result(spec=spec, status="ok", measurement=measured, metrics={**failed, **probe})
    assert "no verdict: the smaller-batch probe failed: RuntimeError: out of memory" in (
        derived_notes(alone)
    )
    assert derived_notes(others) == [
        "the smaller-batch probe failed in a process (RuntimeError: out of memory); the "
        "verdict counts the others"
    ]


def test_the_legend_comes_once_after_every_workload_s_table():
    """Issue 37 item 11: the ~600-character legend once per command, not under each table."""
    from dataclasses import replace

    other = replace(_result(), spec=RunSpec("mlp", "cpu", 64, 20, precision="bf16"))
    text = run_tables([_result(), other], width=250)
    assert text.count("accelbench: ") == 2  # a table per workload
    legend = "it = the workload's steps per it on one fixed batch"
    assert text.count(legend) == 1
    assert text.rstrip().splitlines()[-1].startswith(legend)  # after the last table
    assert run_tables([_result(status="oom")]).count(legend) == 0  # no figures: no legend


def test_the_html_report_shows_the_verify_results_its_header_counts():
    """Issue 37 item 11: "1 verify results (no timing)" was counted and never shown."""
    from accelbench.analysis.facts import Verification
    from accelbench.render.html import html_report

    facts = Verification(verdict="ok", loss_curve=(2.1, 0.4), accuracy=0.953, is_baseline=True)
    verified = Result(
        spec=RunSpec("seed-cnn", "cpu", 64, 1, precision="fp32"),
        status="ok",
        environment={"device_model": "Test CPU", "host": "h"},
        metrics=facts.to_metrics(),
        id=8,
    )
    page = html_report([_result(), verified])
    assert "1 verify results (no timing), listed under Verification" in page
    section = page[page.index("<h2>Verification</h2>") :]
    assert "95.3%" in section and "baseline" in section and "0.4" in section
    assert "<h2>Verification</h2>" not in html_report([_result()])  # none: no section


def test_a_serve_row_leaves_out_it_s_and_step_time_and_says_what_its_figure_is():
    """A mode that measures on its own (serve: LoadGen's figure, one sample a process) has no
    it or step: its row must not show the seconds a block would take at that rate as one."""
    from dataclasses import replace

    import accelbench.modes  # noqa: F401  (registers serve)

    looped = _result()
    served = replace(looped, spec=replace(looped.spec, mode="serve"), id=8)
    text = run_tables([looped, served], width=300)
    rows = [line for line in text.splitlines() if line.startswith("│ cpu")]
    assert len(rows) == 2
    step_time = _header_cells(text).index("step time")
    cells = [[c.strip() for c in row.strip("│").split("│")] for row in rows]
    assert cells[0][step_time] != "—" and cells[1][step_time] == "—"
    assert cells[1][_header_cells(text).index("it/s")] == "—"
    assert "For serve, samples/s is the scenario's figure" in text
    assert "For serve" not in run_tables([looped], width=300)
