"""The real command line, end to end, in subprocesses."""

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import time

import pytest
import torch

from tests.conftest import REPO, copy_of, digest, run_cli


@pytest.mark.parametrize("argv", [["--help"], ["results", "--help"]])
def test_help_does_not_import_torch(argv):
    code = (
        "import sys; from accelbench.cli.main import main\n"
        f"try: main({argv!r})\n"
        "except SystemExit: pass\n"
        "print('torch' in sys.modules, 'numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "usage: accelbench" in out.stdout
    torch_loaded, _ = out.stdout.strip().splitlines()[-1].split()
    assert torch_loaded == "False"


def test_run_prints_the_table_and_stores_the_result(tmp_path):
    db = tmp_path / "r.db"
    started = time.monotonic()
    out = run_cli("run", "seed-cnn", "--devices", "cpu", "--blocks", "2", "--db", str(db))
    waited = time.monotonic() - started
    assert out.returncode == 0, out.stderr
    assert "seed-cnn" in out.stdout and "it/s" in out.stdout
    # the last line: the whole command's wall, at most what this test waited for it
    last = out.stdout.splitlines()[-1]
    assert last.startswith("wall time from this command's start to this line: "), last
    assert 1.0 < float(last.split()[-2]) <= waited + 0.05, (last, waited)
    # a CPU-only run has no ratio to the CPU, and this CPU no peak for an MFU: left out
    header = next(line for line in out.stdout.splitlines() if "configuration" in line)
    assert "vs CPU" not in header and "MFU" not in header and "TFLOP/s" in header
    assert f"stored as result(s) #1 in {db}" in out.stdout
    listed = run_cli("results", "--db", str(db), "--json")
    rows = json.loads(listed.stdout)
    assert len(rows) == 1 and rows[0]["spec"]["workload"] == "seed-cnn"
    # two its, one in each of two processes: an interval across them, however wide
    assert len(rows[0]["samples_s"]) == 2 and rows[0]["rounds"] == [[1, 1], [1, 1]]
    assert rows[0]["it_per_s"]["processes"] == 2 and rows[0]["it_per_s"]["ci95_low"] is not None


def test_run_json_carries_raw_samples_and_statistics(tmp_path):
    db = tmp_path / "r.db"
    out = run_cli(
        "run",
        "mlp",
        "--devices",
        "cpu",
        "--blocks",
        "8",
        "--warmup",
        "2",
        "--json",
        "--db",
        str(db),
    )
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)  # nothing but JSON on stdout
    (result,) = payload["results"]
    # 8 its spread over 3 processes (3, 3, 2), each after its own 2 warm-up its
    assert result["rounds"] == [[3, 2], [3, 2], [2, 2]] and result["processes"] == 3
    assert len(result["samples_s"]) == 8 and len(result["warmup_s"]) == 6
    stats = result["it_per_s"]
    assert stats["n"] == 8 and stats["processes"] == 3
    assert stats["ci95_low"] <= stats["median"] <= stats["ci95_high"]
    samples = result["samples_s"]
    medians = [statistics.median(part) for part in (samples[:3], samples[3:6], samples[6:])]
    assert result["block_time_s"]["median"] == pytest.approx(statistics.geometric_mean(medians))
    assert result["environment"]["device"] == "cpu"


def test_db_from_environment_variable(measured_db):
    # measured_db's `run` had no --db, only $ACCELBENCH_DB naming this file
    assert measured_db.exists()


def test_devices_and_workloads_list(tmp_path):
    devices = json.loads(run_cli("devices", "--json").stdout)
    assert {d["kind"] for d in devices} == {"cpu", "cuda", "mps", "xpu"}
    assert "cpu" in run_cli("devices").stdout
    workloads = json.loads(run_cli("workloads", "--json").stdout)
    assert {w["name"] for w in workloads} >= {"seed-cnn", "mlp"}


BAD_RUNS = {
    "unknown workload": (
        ["run", "resnet9000"],
        "unknown workload 'resnet9000' (did you mean resnet50?); valid:",
    ),
    "unknown device": (["run", "--devices", "tpu"], "unknown device 'tpu'; valid: cpu, cuda"),
    "zero blocks": (["run", "--blocks", "0"], "argument --blocks: must be 1 or more, got 0"),
    "word blocks": (["run", "--blocks", "many"], "argument --blocks: 'many' is not a whole number"),
    "negative warmup": (["run", "--warmup", "-1"], "argument --warmup: must be 0 or more"),
    "unknown command": (["fly"], "unknown command 'fly'; valid: run, explain"),
    "unknown precision": (
        ["run", "--precisions", "fp32,fp64"],
        "argument --precisions: invalid value 'fp64'; valid: fp32, tf32, fp16, bf16",
    ),
    "zero batch": (["run", "--batch-sizes", "8,0"], "argument --batch-sizes: must be 1 or more"),
    "unknown compile mode": (["run", "--compile", "fast"], "invalid value 'fast'; valid: off,"),
    "unknown mode": (["run", "--modes", "eval"], "invalid value 'eval'; valid: train, infer"),
    "bad max-time": (
        ["run", "--max-time", "-3"],
        "argument --max-time: must be a number of seconds above 0 and at most 604,800",
    ),
    "infinite max-time": (
        ["run", "--max-time", "inf"],
        "argument --max-time: must be a number of seconds above 0 and at most 604,800",
    ),
    "max-batch with batch sizes": (
        ["run", "--max-batch", "--batch-sizes", "8"],
        "--max-batch searches the batch size itself; drop --batch-sizes",
    ),
    "shape without a model": (["run", "--input-shape", "3x8x8"], "describe a --model"),
    "unknown pruning": (
        ["run", "--pruning", "none,magic:0.5"],
        "argument --pruning: invalid pruning 'magic:0.5'; valid: none, unstructured:AMOUNT, "
        "channels:AMOUNT",
    ),
    "pruning everything": (
        ["run", "--pruning", "channels:1.0"],
        "argument --pruning: pruning amount must be between 0 and 1 (exclusive), got 1.0",
    ),
}
if not torch.cuda.is_available():
    BAD_RUNS["unavailable device"] = (
        ["run", "--devices", "cpu,cuda"],
        "device 'cuda' is not available here:",
    )


@pytest.mark.parametrize("case", sorted(BAD_RUNS))
def test_bad_input_is_one_line_exit_2_and_the_database_is_untouched(tmp_path, case, measured_db):
    args, message = BAD_RUNS[case]
    db = copy_of(measured_db, tmp_path)  # one real result
    before = digest(db)
    out = run_cli(*args, "--db", str(db)) if args[0] == "run" else run_cli(*args)
    assert out.returncode == 2
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert digest(db) == before


def test_bad_databases_are_refused_in_one_line(tmp_path):
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE invoices (n INTEGER)")
    conn.commit()
    conn.close()
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    cases = {
        str(foreign): "is not an accelbench database (it holds: invoices)",
        str(text): "is not an accelbench database (not an SQLite file)",
        str(tmp_path): "it is a directory",
        str(tmp_path / "missing" / "r.db"): "does not exist",
    }
    for path, message in cases.items():
        before = digest(foreign), digest(text)
        out = run_cli("run", "mlp", "--devices", "cpu", "--blocks", "1", "--db", path)
        assert out.returncode == 2, path
        assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert (digest(foreign), digest(text)) == before
    out = run_cli("results", "--db", str(tmp_path / "absent.db"))
    assert out.returncode == 2 and "no results database" in out.stderr


def test_run_prunes_channels_for_inference_and_refuses_training(tmp_path):
    db = tmp_path / "r.db"
    out = run_cli(
        "run",
        "seed-cnn",
        "--devices",
        "cpu",
        "--modes",
        "train,infer",
        "--pruning",
        "none,channels:0.50",
        "--blocks",
        "2",
        # a small batch, one process, no latency: pruning is under test, not seed-cnn's speed
        *("--batch-sizes", "8", "--rounds", "1", "--no-latency"),
        "--no-verdict",
        "--json",
        "--db",
        str(db),
    )
    assert out.returncode == 0, out.stderr
    results = {
        (r["spec"]["mode"], r["spec"]["pruning"]): r for r in json.loads(out.stdout)["results"]
    }
    assert len(results) == 4
    train = results[("train", "channels:0.5")]  # one spelling of the amount
    assert train["status"] == "unsupported" and "inference lever" in train["error"]
    pruned, plain = results[("infer", "channels:0.5")], results[("infer", "")]
    assert pruned["status"] == plain["status"] == "ok"
    assert pruned["label"] == "infer fp32 b8 pruned-channels:0.5"
    counts = pruned["metrics"]["pruning"]
    assert counts["params_after"] < counts["params_before"] == 338_486
    assert pruned["metrics"]["flops_per_sample"] < plain["metrics"]["flops_per_sample"]
    compared = run_cli("compare", "--by", "pruning", "--mode", "infer", "--db", str(db))
    assert compared.returncode == 0 and "vs none" in compared.stdout, compared.stderr


def test_module_runs_from_the_source_tree():
    out = subprocess.run(
        [sys.executable, "-m", "accelbench", "--version"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert out.stdout.startswith("accelbench ")


def _choices(action):
    """The vocabulary an option offers: argparse's choices, or that of its list type."""
    from accelbench.cli.options import ListOf, OneOf

    kind = action.type.item if isinstance(action.type, ListOf) else action.type
    return kind.valid if isinstance(kind, OneOf) else action.choices


def _options(parser, path=()):
    """(command path, action) for every option of every command and action."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*path, name))
        else:
            yield path, action


def test_cli_offers_the_library_vocabularies_themselves():
    """Modes, precisions, statuses and backends are defined once: each option offering one
    offers the library's own object, not a copy that could drift."""
    from accelbench.backends import onnxruntime
    from accelbench.cli.main import build_parser
    from accelbench.core import result, vocab
    from accelbench.core.modes import mode_names
    from accelbench.levers import find_lever

    modes = mode_names()  # a registry: the same names, in registration order
    library = {
        "mode": modes,
        "modes": modes,
        "precision": result.PRECISIONS,
        "precisions": result.PRECISIONS,
        "status": result.STATUSES,
        "backends": vocab.BACKENDS,
    }
    seen = set()
    for path, action in _options(build_parser()):
        if action.dest not in library:
            continue
        seen.add((path[0], action.dest))
        offered = _choices(action)
        if path == ("verify",) and action.dest == "precisions":  # training ones: no int8
            assert offered == tuple(p for p in result.PRECISIONS if p != "int8")
        elif path == ("export",) and action.dest == "precision":  # what an exporter writes
            assert set(offered) < set(result.PRECISIONS)
        elif action.dest == "mode" and offered is None:  # a filter: a stored plugin's mode too
            assert action.help == "only this mode", path
        elif action.dest in ("mode", "modes"):
            assert tuple(offered) == modes, (path, action.dest)
        else:
            assert offered is library[action.dest], (path, action.dest)
    assert {("run", "modes"), ("run", "backends")} <= seen
    assert find_lever("precision").words is result.PRECISIONS  # run's --precisions
    assert {("optimize", "mode"), ("results", "status"), ("compare", "precision")} <= seen
    assert onnxruntime.BACKEND == vocab.ONNXRUNTIME and vocab.ONNXRUNTIME in vocab.BACKENDS


def test_lever_choices_come_from_the_lever_registry():
    """compare --by, optimize --levers and run's lever options are the registry's."""
    from accelbench.cli.main import build_parser
    from accelbench.levers import all_levers, default_groups, dimensions, ladder_groups

    offered = {(path, action.dest): action for path, action in _options(build_parser())}
    assert offered[("compare",), "by"].choices == tuple(dimensions())
    levers = offered[("optimize",), "levers"]
    assert levers.default == default_groups()  # all but the opt-in groups
    assert set(ladder_groups()) - set(default_groups()) == {"autotune", "batch"}
    assert "autotune, batch, which are tried only when named" in levers.help
    for lever in (lever for lever in all_levers() if lever.option):  # the batch has a field
        action = offered[("run",), f"lever_{lever.name}"]
        assert action.option_strings == [lever.option] and action.default == (lever.default,)


def test_a_status_outside_the_vocabulary_is_refused():
    out = run_cli("results", "--status", "fine")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "argument --status: invalid value 'fine'; valid: ok, oom, error, timeout" in out.stderr


def test_no_help_text_shows_a_doubled_percent_sign():
    """argparse %-formats help strings but not descriptions: a '%%' there would print as is."""
    from accelbench.cli.main import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subparsers.choices.items():
        assert "%%" not in sub.format_help(), name
