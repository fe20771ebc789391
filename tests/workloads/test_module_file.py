"""Issue 37 item 12: an nn.Module object becomes a workload a worker can load: pickled into
the temp folder, named by its content, refused where a worker could not import its class."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

from accelbench import ModelOptions, UsageError, WorkloadRef
from accelbench.workloads import load_workload

OPTIONS = ModelOptions(input_shape=(6,), num_classes=2)


def test_the_same_module_is_the_same_workload_and_loads_as_a_model_file():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 2))
    ref = WorkloadRef.from_module(model, OPTIONS)
    assert ref == WorkloadRef.from_module(model, OPTIONS)  # same sweep id, resume finds it
    assert ref.custom and ref.name.endswith(".py:model") and ref.options == OPTIONS
    with torch.no_grad():
        model[0].weight.add_(1.0)
    assert WorkloadRef.from_module(model, OPTIONS) != ref  # other weights: another workload
    loaded = load_workload(WorkloadRef.from_module(model, OPTIONS)).build_model()
    assert torch.equal(loaded[0].weight, model[0].weight)


@pytest.mark.parametrize(
    ("model", "options", "said"),
    [
        ("mlp", OPTIONS, "from_module takes a torch nn.Module, not str"),
        (nn.Linear(6, 2), ModelOptions(), "from_module needs the input shape of one sample"),
    ],
)
def test_what_is_not_a_module_with_its_shape_is_refused(model, options, said):
    with pytest.raises(UsageError, match=said):
        WorkloadRef.from_module(model, options)


def test_a_class_of_an_interactive_session_is_refused_with_the_way_that_works():
    code = (
        "from torch import nn\n"
        "import accelbench\n"
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n"
        "try:\n"
        "    accelbench.WorkloadRef.from_module(Net(), accelbench.ModelOptions(input_shape=(2,)))\n"
        "except accelbench.UsageError as exc:\n"
        "    print(exc)\n"
    )
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert said.stdout.startswith("class Net is defined in this interactive session")
    assert "define it in a file and import it from there" in said.stdout
