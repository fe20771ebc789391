"""The user's code runs only in workers (engine/worker.describe_isolated): the command plans a
`--model` from what a worker that loaded it says, so a model file or factory that exits, dies
or changes the directory reaches the command as one line, or not at all."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.conftest import digest, run_cli

MODELS = textwrap.dedent(
    """
    import multiprocessing
    import os
    import sys

    from torch import nn

    with open(os.environ["ACCELBENCH_TEST_WHERE"], "a") as f:  # who imported this file
        f.write(f"{multiprocessing.parent_process() is not None}\\n")


    def make():
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))


    def leaves():
        sys.exit(0)


    def dies():
        os._exit(3)


    def moves():
        os.chdir("/")
        return make()


    class Quits(nn.Module):
        def forward(self, x):
            sys.exit(0)


    def quits():
        return Quits()
    """
)
OPTIONS = ["--input-shape", "8", "--num-classes", "2", "--devices", "cpu", "--epochs", "2"]
OPTIONS += ["--no-latency", "--quiet"]


def _run(tmp_path, factory):
    (tmp_path / "models.py").write_text(MODELS)
    where = tmp_path / "where.txt"
    out = run_cli(
        "run", "--model", f"models.py:{factory}", *OPTIONS, "--db", "rel.db",
        cwd=tmp_path, env={"ACCELBENCH_TEST_WHERE": str(where)},
    )  # fmt: skip
    return out, where.read_text().split() if where.exists() else []


def test_the_command_never_imports_the_models_file(tmp_path):
    out, where = _run(tmp_path, "make")
    assert out.returncode == 0, out.stderr
    assert where and set(where) == {"True"}  # each import was in a worker process


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("leaves", "accelbench: error: models.py:leaves: the model's code called sys.exit(0)"),
        ("dies", "accelbench: error: loading models.py:dies failed: the worker process died "
                 "(exit code 3)"),
    ],
)  # fmt: skip
def test_a_factory_that_ends_its_program_is_one_line_exit_2_and_stores_nothing(
    tmp_path, factory, message
):
    first, _ = _run(tmp_path, "make")
    assert first.returncode == 0, first.stderr
    before = digest(tmp_path / "rel.db")
    out, _ = _run(tmp_path, factory)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == message
    assert digest(tmp_path / "rel.db") == before


def test_a_factory_that_changes_directory_moves_nothing_of_the_commands(tmp_path):
    out, _ = _run(tmp_path, "moves")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "rel.db").is_file() and "in rel.db" in out.stdout


def test_a_forward_that_ends_its_program_is_its_configurations_error(tmp_path):
    (tmp_path / "models.py").write_text(MODELS)
    out = run_cli(
        "run", "--model", "models.py:quits", *OPTIONS, "--json", "--db", "rel.db",
        cwd=tmp_path, env={"ACCELBENCH_TEST_WHERE": str(tmp_path / "where.txt")},
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    (result,) = json.loads(out.stdout)["results"]
    assert result["status"] == "error"
    assert result["error"] == "the model's code called sys.exit(0)"
