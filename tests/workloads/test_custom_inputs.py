"""Your own model as it comes (issue 37, items 4 to 7): several inputs, a module beside the
model's file, a factory's arguments, and export of such models. Each test writes its model
file and drives the real command line on the CPU."""

import json
import textwrap

import pytest

from tests.conftest import run_cli

# Imported by the model file from beside it, as a script's own modules are.
LAYERS = textwrap.dedent(
    """
    from torch import nn


    def head(width, classes):
        return nn.Linear(width, classes)
    """
)

TWO_INPUTS = textwrap.dedent(
    """
    import torch
    from torch import nn

    from accelbench.workloads import Workload
    from beside_layers import head


    class TwoInputs(nn.Module):
        def __init__(self, width=4):
            super().__init__()
            self.conv = nn.Conv2d(3, width, 3)
            self.meta = nn.Linear(4, width)
            self.head = head(2 * width, 5)

        def forward(self, image, meta):
            pooled = self.conv(image).mean(dim=(2, 3))
            return self.head(torch.cat([pooled, self.meta(meta)], dim=1))


    def make(width=4):
        return TwoInputs(width)


    def single(width=4):
        # a one-input model, for export
        return nn.Sequential(nn.Conv2d(3, width, 3), nn.Flatten(), nn.LazyLinear(5))


    class DictBatch(Workload):
        name = "dict-batch"
        batch_size = 4
        input_shape = (3, 8, 8)
        num_classes = 5

        def build_model(self):
            return TwoInputs()

        def make_batch(self, generator, batch_size):
            inputs = {
                "image": torch.randn(batch_size, 3, 8, 8, generator=generator),
                "meta": torch.randn(batch_size, 4, generator=generator),
            }
            return inputs, torch.randint(0, 5, (batch_size,), generator=generator)


    def dict_batch():
        return DictBatch()
    """
)


@pytest.fixture
def two_inputs(tmp_path):
    """The two-input model's file, with the module it imports beside it."""
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "beside_layers.py").write_text(LAYERS)
    path = folder / "two_inputs.py"
    path.write_text(TWO_INPUTS)
    return path


def _run(db, *options):
    """One quick measurement on the CPU: a few its, one process, no probe or latency."""
    return run_cli(
        "run",
        *options,
        "--devices",
        "cpu",
        "--blocks",
        "2",
        "--rounds",
        "1",
        "--no-verdict",
        "--no-latency",
        "--json",
        "--quiet",
        "--db",
        str(db),
    )


def test_a_model_file_imports_a_module_beside_it(two_inputs, tmp_path):
    """Item 5: run from another folder, the model's `from beside_layers import head` works,
    as it would when the file is run as a script."""
    out = _run(
        tmp_path / "r.db",
        "--model",
        f"{two_inputs}:make",
        "--input-shape",
        "3x8x8,4",
        "--num-classes",
        "5",
        "--modes",
        "infer",
    )
    assert "No module named" not in out.stdout + out.stderr
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)["results"]
    assert [r["status"] for r in results] == ["ok"], results


def _results(out):
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)["results"]


def test_a_forward_of_several_tensors_gets_one_shape_per_input(two_inputs, tmp_path):
    """Item 4: `forward(image, meta)` fed in order, then by name, trained and inferred; the
    image input in channels_last too."""
    out = _run(
        tmp_path / "r.db",
        "--model",
        f"{two_inputs}:make",
        "--input-shape",
        "image=3x8x8,meta=4",
        "--num-classes",
        "5",
        "--modes",
        "train,infer",
        "--memory-formats",
        "contiguous,channels_last",
    )
    assert out.returncode == 0, out.stderr
    results = _results(out)
    assert [r["status"] for r in results] == ["ok"] * 4, [r["error"] for r in results]
    assert {r["spec"]["channels_last"] for r in results} == {False, True}


def test_a_workload_may_return_a_dict_batch(two_inputs, tmp_path):
    """Item 4: a Workload whose make_batch returns {"image": ..., "meta": ...} is moved to the
    device tensor by tensor and called with keyword arguments."""
    out = _run(tmp_path / "r.db", "--model", f"{two_inputs}:dict_batch", "--modes", "train")
    assert out.returncode == 0, out.stderr
    (result,) = _results(out)
    assert result["status"] == "ok", result["error"]
    assert result["spec"]["workload"] == "dict-batch"


def test_one_shape_for_two_inputs_names_the_routes_that_work(two_inputs, tmp_path):
    """Item 4: where the options cannot feed the forward, its error says how to."""
    out = _run(
        tmp_path / "r.db",
        "--model",
        f"{two_inputs}:make",
        "--input-shape",
        "3x8x8",
        "--num-classes",
        "5",
        "--modes",
        "infer",
    )
    (result,) = _results(out)
    assert result["status"] == "error"
    assert "missing 1 required positional argument: 'meta'" in result["error"]
    assert "3x224x224,4" in result["error"] and "docs/extending.md" in result["error"]


@pytest.mark.parametrize(
    ("shape", "problem"),
    [
        ("image=3x8x8,4", "name every input or none"),
        ("image=3x8x8,image=4", "a name given twice"),
        ("3x8x8,0", "each size from 1"),
    ],
)
def test_bad_input_shapes_are_one_line_exit_2(two_inputs, tmp_path, shape, problem):
    db = tmp_path / "r.db"
    out = run_cli("run", "--model", f"{two_inputs}:make", "--input-shape", shape,
                  "--num-classes", "5", "--devices", "cpu", "--db", str(db))  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert problem in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not db.exists()


def test_a_factorys_arguments_name_their_own_result(two_inputs, tmp_path):
    """Item 6: `--model-arg width=6` reaches the factory (a width of 6 builds another model),
    and two sets of arguments are two workloads in one store, each named with its own."""
    db = tmp_path / "r.db"
    names = []
    for width in ("2", "6"):
        out = _run(
            db,
            "--model",
            f"{two_inputs}:make",
            "--model-arg",
            f"width={width}",
            "--input-shape",
            "3x8x8,4",
            "--num-classes",
            "5",
            "--modes",
            "infer",
        )
        assert out.returncode == 0, out.stderr
        (result,) = _results(out)
        names.append(result["spec"]["workload"])
    assert names == [f"{two_inputs}:make(width=2)", f"{two_inputs}:make(width=6)"]
    listed = run_cli("results", "--db", str(db), "--json")
    assert {r["spec"]["workload"] for r in json.loads(listed.stdout)} == set(names)


def test_a_factorys_argument_that_it_does_not_take_is_said(two_inputs, tmp_path):
    out = run_cli("export", "--model", f"{two_inputs}:single", "--model-arg", "depth=3",
                  "--input-shape", "3x8x8", "--to", "onnx", "--out", str(tmp_path))  # fmt: skip
    assert out.returncode == 2
    assert "single(depth=3) failed: TypeError" in out.stderr and "depth" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        (("--model-arg", "18"), "'18' is not NAME=VALUE"),
        (("--model-arg", "2x=1"), "'2x=1' is not NAME=VALUE"),
    ],
)
def test_bad_model_args_are_one_line_exit_2(two_inputs, tmp_path, options, problem):
    out = run_cli("explain", "--model", f"{two_inputs}:make", *options,
                  "--db", str(tmp_path / "r.db"))  # fmt: skip
    assert out.returncode == 2 and problem in out.stderr


@pytest.mark.parametrize("command", ["run", "optimize", "verify", "explain", "export"])
def test_model_args_need_a_model(command, tmp_path):
    store = () if command == "export" else ("--db", str(tmp_path / "r.db"))  # export stores none
    out = run_cli(command, "mlp", "--model-arg", "depth=18", *store)
    assert out.returncode == 2
    assert "--model-arg" in out.stderr and "--model" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_export_of_a_dict_batch_says_the_whole_cause_in_one_line(two_inputs, tmp_path):
    """Item 7: no sentence cut at a line break of torch.onnx's message: why, and what to do."""
    out = run_cli("export", "--model", f"{two_inputs}:dict_batch", "--to", "onnx",
                  "--out", str(tmp_path / "out"))  # fmt: skip
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert "several inputs (image=1x3x8x8, meta=1x4)" in line
    assert line.endswith("call torch.onnx.export with your inputs yourself")


def test_two_files_factories_of_one_name_export_to_two_files(two_inputs, tmp_path):
    """Item 7: `a.py:single` and `b.py:single` into one folder do not overwrite each other;
    a factory's arguments are in the name too."""
    other = two_inputs.with_name("other_nets.py")
    other.write_text(two_inputs.read_text())
    out_dir = tmp_path / "out"
    paths = []
    for model, args in ((two_inputs, ()), (other, ()), (other, ("--model-arg", "width=2"))):
        out = run_cli("export", "--model", f"{model}:single", *args, "--input-shape", "3x8x8",
                      "--to", "onnx", "--out", str(out_dir), "--json")  # fmt: skip
        assert out.returncode == 0, out.stderr
        (report,) = json.loads(out.stdout)
        paths.append(report["path"])
    assert [p.rpartition("/")[2] for p in paths] == [
        "two_inputs.single.fp32.onnx",
        "other_nets.single.fp32.onnx",
        "other_nets.single(width=2).fp32.onnx",
    ]
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(p.rpartition("/")[2] for p in paths)


def test_verify_refuses_several_inputs_in_one_line(two_inputs, tmp_path):
    """Item 4: verify trains on digits, fed as the model's one input: a two-input model is
    refused before anything trains, in one line."""
    db = tmp_path / "r.db"
    out = run_cli("verify", "--model", f"{two_inputs}:make", "--input-shape", "3x8x8,4",
                  "--num-classes", "5", "--devices", "cpu", "--db", str(db))  # fmt: skip
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert "forward takes several inputs" in line and "one CxHxW image tensor" in line
