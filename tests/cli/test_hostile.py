"""Hostile and careless input: strings from results render inertly everywhere, import refuses
what it could not use, and the store holds under concurrent first use and odd --db paths."""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench.analysis.compare import DEVICE, compare
from accelbench.core.facts import check
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.render import markdown_report, throughput_chart
from accelbench.render.console import compare_table, results_table, run_tables, verify_table
from accelbench.render.console.table import new_table, render_table
from accelbench.render.html import html_report
from accelbench.render.rows import HEADERS
from accelbench.render.text import inert
from accelbench.store.db import Store
from accelbench.store.results_file import write_export
from tests.conftest import digest, run_cli

# What an imported file may carry: ANSI colour, an OSC window title, clear-screen, a C1 control,
# a bidirectional override, rich markup (closing and opening tags), mathtext, Markdown's pipe
ANSI = "\x1b[31mred\x1b[0m \x1b]0;owned\x07 \x1b[2J \x9b \u202e"
MARKUP = "[/x] [bold]x[/bold]"
MATH = r"$\frac{$ and $x^$"
ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]")  # all but the tables' own \n and \t


def _hostile(device: str = "cpu", status: str = "ok", **changes: object) -> Result:
    name = f"w {ANSI} {MARKUP} {MATH} a|b\r\nc"
    fields: dict = dict(
        spec=RunSpec(name, device, 4, 2),
        status=status,
        measurement=Measurement((0.5, 0.4, 0.6), (0.9,)) if status == "ok" else None,
        error="" if status == "ok" else f"[enforce fail at alloc_cpu.cpp:127] {ANSI} {MARKUP}",
        environment={"host": f"h {ANSI} {MARKUP} {MATH}", "device_model": f"m {MARKUP}"},
        id=1,
    )
    return Result(**{**fields, **changes})


def _assert_inert(text: str) -> None:
    assert not ACTIVE.search(text), repr(text)
    assert r"\x1b[31mred" in text and r"\u202e" in text  # shown, visibly, not acted on


def test_inert_writes_every_active_character_as_its_escape():
    assert inert("a\x1b[2Jb\r\n\x07\x9b\u202e\ud800") == r"a\x1b[2Jb\r\n\x07\x9b\u202e\ud800"
    assert inert("[bold] é 日本 \\x") == "[bold] é 日本 \\x"  # text itself untouched


def test_console_tables_show_hostile_strings_literally_and_inertly():
    failed = _hostile("cuda:0", status="error")
    verify = _hostile(status="error", metrics={"verify": {"verdict": "error"}})
    for text in (
        results_table([_hostile(), failed], width=400),
        compare_table(compare([_hostile(), _hostile("cuda:0")], DEVICE), width=400),
        run_tables([_hostile(), failed], width=400),
        verify_table([verify], width=400),
    ):
        _assert_inert(text)
        assert MARKUP in text  # neither parsed (it would crash or vanish) nor dropped
    assert "[enforce fail at alloc_cpu.cpp:127]" in run_tables([failed], width=400)


def test_the_table_helpers_escape_title_headers_cells_and_notes():
    # optimize, export and the listings build their tables through these two helpers
    table = new_table(f"t {ANSI} {MARKUP}", ["h", f"h {MARKUP}"], left_columns=1)
    table.add_row(f"c {ANSI}", MARKUP)
    text = render_table(table, [f"note {ANSI} {MARKUP}"], width=400)
    _assert_inert(text)
    assert text.count(MARKUP) == 4


def test_markdown_keeps_one_line_per_row_and_no_control_characters():
    text = markdown_report([_hostile(), _hostile("cuda:0", status="error")])
    _assert_inert(text)
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 3  # header, rule, one result: \r\n did not split the row
    cells = table[0].count(" | ") + 1  # the columns shown (those saying nothing left out)
    assert cells <= len(HEADERS)
    assert all(line.count(" | ") == cells - 1 for line in table[2:])  # a|b did not add a cell
    assert r"a\|b\r\nc" in table[2]


def test_html_shows_control_characters_visibly():
    text = html_report([_hostile(status="error")])  # failed: no chart, the text alone
    _assert_inert(text)


def test_charts_draw_dollar_signs_literally():
    png = throughput_chart([_hostile()])  # "$\frac{$" would fail to parse as mathtext
    assert png is not None and png.startswith(b"\x89PNG")


def _store_with(db: Path, *results: Result) -> Path:
    with Store(db) as store:
        for r in results:
            store.save(r)
    return db


def test_cli_lists_compares_and_reports_hostile_results(tmp_path):
    db = _store_with(tmp_path / "h.db", _hostile(), _hostile("cuda:0"), _hostile(status="error"))
    for args in (["results"], ["compare"], ["report", "--format", "markdown"]):
        out = run_cli(*args, "--db", str(db))
        assert out.returncode == 0 and not out.stderr, out.stderr
        _assert_inert(out.stdout)
        assert "[/x]" in out.stdout  # the whole of MARKUP may wrap in a cell 160 columns wide
    page = tmp_path / "r.html"
    out = run_cli("report", "--out", str(page), "--db", str(db))
    assert out.returncode == 0, out.stderr
    assert "data:image/png" in page.read_text()


# --- import refuses what it could not use -------------------------------------------------


def _export(tmp_path: Path, change: object) -> Path:
    path = tmp_path / "e.json"
    write_export([_hostile()], path)
    payload = json.loads(path.read_text())
    change(payload["results"][0])  # type: ignore[operator]
    path.write_text(json.dumps(payload))  # infinity is written as JSON's Infinity
    return path


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


BAD_IMPORTS = {
    "infinite sample": (lambda r: r.update(samples=[math.inf]), "finite numbers of seconds"),
    "verdict as text": (
        lambda r: r.update(metrics={"verdict": "fast"}),
        "metrics.verdict has the wrong type (str)",
    ),
    "text in a group": (
        lambda r: r.update(metrics={"verify": {"reasons": "abc"}}),
        "metrics.verify.reasons has the wrong type (str)",
    ),
    "huge integer": (lambda r: r.update(peak_memory=2**64), "beyond the integers"),
    "huge batch": (lambda r: r["spec"].update(batch_size=2**63), "beyond the integers"),
    "deep metrics": (lambda r: r.update(metrics={"x": json.loads(_nested(100))}), "deeper than"),
}


@pytest.mark.parametrize("case", sorted(BAD_IMPORTS))
def test_import_refuses_values_a_renderer_could_not_use(tmp_path, case):
    change, message = BAD_IMPORTS[case]
    path = _export(tmp_path, change)
    db = _store_with(tmp_path / "kept.db", _hostile())
    before = digest(db)
    out = run_cli("results", "import", str(path), "--db", str(db))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert message in out.stderr and str(path) in out.stderr
    assert digest(db) == before


@pytest.mark.parametrize(
    "text", [_nested(100_000), '{"results": [' + "9" * 5000 + "]}"], ids=["nested", "digits"]
)
def test_unparseable_json_is_one_line_and_writes_nothing(tmp_path, text):
    path = tmp_path / "e.json"
    path.write_text(text)
    out = run_cli("results", "import", str(path), "--db", str(tmp_path / "new.db"))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "new.db").exists()


def test_the_facts_check_takes_what_writers_write_and_names_what_it_refuses():
    check(
        {
            "mfu": 0.5,
            "verdict": {"kind": "compute-bound", "explanation": "x"},
            "ranks": [{"rank": 0, "device": "cuda:0", "it_per_s": 3, "peak_memory": None}],
            "world_size": 1,
            "optimize": {"variant": "fp32 eager", "tolerance": {"max_rel_error": 0.05}},
            "max_batch": 8,
            "max_batch_probes": [[8, "ok"]],
            "unknown_key": {"kept": [1, 2]},
        }
    )
    bad = {
        "world_size": 1,
        "ranks": [{"rank": 0, "device": "c", "it_per_s": 1, "peak_memory": "x"}],
    }
    with pytest.raises(ValueError, match="metrics.ranks"):
        check(bad)
    with pytest.raises(ValueError, match="metrics.pruning.method is missing"):
        check({"pruning": {"params_before": 1}})


# --- the store ---------------------------------------------------------------------------


def test_two_concurrent_first_imports_both_land(tmp_path):
    files = []
    for name in ("a", "b"):
        results = [replace_uid(_hostile(), f"{name}{i}") for i in range(3)]
        files.append(tmp_path / f"{name}.json")
        write_export(results, files[-1])
    command = [sys.executable, "-m", "accelbench", "results", "import"]
    for trial in range(10):
        db = tmp_path / f"fresh{trial}.db"
        both = [
            subprocess.Popen([*command, str(f), "--db", str(db)], stderr=subprocess.PIPE, text=True)
            for f in files
        ]
        errors = [p.communicate(timeout=120)[1] for p in both]
        assert [p.returncode for p in both] == [0, 0], errors
        with Store(db, create=False) as store:
            assert len(store.results()) == 6, f"trial {trial}"


def replace_uid(result: Result, uid: str) -> Result:
    from dataclasses import replace

    return replace(result, uid=uid)


@pytest.fixture
def read_only_db(tmp_path):
    """A database this process cannot write: read-only for others, immutable for root."""
    db = _store_with(tmp_path / "ro.db", _hostile())
    db.chmod(0o444)
    immutable = os.geteuid() == 0
    if immutable and subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode:
        pytest.skip("root cannot make a file read-only here (no chattr +i)")
    yield db
    if immutable:
        subprocess.run(["chattr", "-i", str(db)], check=True)
    db.chmod(0o644)


MODEL = """
import torch
from torch import nn

class Counted(nn.Linear):
    def forward(self, x):
        with open({marker!r}, "a") as f:
            f.write("forward\\n")
        return super().forward(x)

def factory():
    return Counted(3, 2)
"""


def test_a_read_only_database_is_refused_before_anything_is_measured(tmp_path, read_only_db):
    marker = tmp_path / "forwards.txt"
    model = tmp_path / "counted.py"
    model.write_text(MODEL.format(marker=str(marker)))
    out = run_cli(
        *("run", "--model", f"{model}:factory", "--input-shape", "3", "--num-classes", "2"),
        *("--devices", "cpu", "--blocks", "3", "--db", str(read_only_db)),
    )
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "cannot write to" in out.stderr and "readonly" in out.stderr
    # at most the CLI's one shape check ran the model; measuring would run it many times
    forwards = marker.read_text().count("forward") if marker.exists() else 0
    assert forwards <= 1


def test_an_empty_db_path_and_a_fifo_are_refused(tmp_path):
    out = run_cli("results", "--db", "", cwd=tmp_path)
    assert out.returncode == 2 and "--db: an empty path" in out.stderr
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = run_cli("results", "--db", str(fifo), timeout=60)
    assert out.returncode == 2 and "not a regular file" in out.stderr
    assert not (tmp_path / "accelbench.db").exists()


def test_reading_commands_never_write_an_empty_or_older_database(tmp_path):
    from accelbench.store.sqlite import _SCHEMA_V1, APPLICATION_ID

    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    out = run_cli("results", "--json", "--db", str(empty))
    assert out.returncode == 0 and json.loads(out.stdout) == []
    assert empty.read_bytes() == b""
    old = tmp_path / "v1.db"
    conn = sqlite3.connect(old)
    conn.executescript(
        f"{_SCHEMA_V1} PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 1;"
    )
    conn.close()
    before = digest(old)
    with Store(old, create=False) as store:  # read through a migrated copy in memory
        assert store.results() == []
    assert digest(old) == before


# --- a hostile environment ----------------------------------------------------------------

FAKE_TORCHES = {
    "raises": ("raise ImportError('not this one')\n", "does not import: ImportError: not this"),
    "hollow": ("answer = 42\n", "is not PyTorch: it has no torch.__version__"),
}


@pytest.mark.parametrize("fake", sorted(FAKE_TORCHES))
@pytest.mark.parametrize("command", [["devices"], ["run", "mlp", "--blocks", "2", "--db", "r.db"]])
def test_a_torch_that_shadows_the_real_one_is_named_in_one_line(tmp_path, fake, command):
    code, said = FAKE_TORCHES[fake]
    (tmp_path / "shadow" / "torch").mkdir(parents=True)
    (tmp_path / "shadow" / "torch" / "__init__.py").write_text(code)
    path = os.pathsep.join([str(tmp_path / "shadow"), os.environ.get("PYTHONPATH", "")])
    out = run_cli(*command, env={"PYTHONPATH": path}, cwd=tmp_path)
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1, out.stderr
    assert f"the torch found at {tmp_path / 'shadow' / 'torch'}" in out.stderr
    assert said in out.stderr


def test_an_ascii_only_stdout_gets_ascii_tables_and_escapes(tmp_path):
    """`PYTHONIOENCODING=ascii` (or a C locale): box drawing and non-ASCII names cannot be
    written; the tables fall back to ASCII borders, lined up, with the names escaped."""
    name = "modèle→"
    db = _store_with(tmp_path / "u.db", _hostile(spec=RunSpec(name, "cpu", 4, 2)))
    for args in (["results"], ["compare"], ["report", "--format", "markdown"]):
        out = run_cli(*args, "--db", str(db), env={"PYTHONIOENCODING": "ascii"})
        assert out.returncode == 0 and not out.stderr, out.stderr
        assert out.stdout.isascii() and r"mod\xe8le\u2192" in out.stdout
    table = run_cli("results", "--db", str(db), env={"PYTHONIOENCODING": "ascii"}).stdout
    lines = [line for line in table.splitlines() if line[:1] in "+|"]
    assert len(lines) >= 4 and len({len(line) for line in lines}) == 1, table
