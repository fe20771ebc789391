"""A workload's model built once per search and loaded in each later process: the same
weights and the same RNG state after them as a build with the seed, and any failure harmless."""

import torch
from torch import nn

from accelbench.workloads import get_workload, weights
from accelbench.workloads.weights import WEIGHTS_DIR, build_seeded


class Counted:
    """A workload whose builds are counted (every other attribute is mlp's)."""

    def __init__(self, workload, make=None):
        self.workload, self.builds, self.make = workload, 0, make

    def __getattr__(self, name):
        return getattr(self.workload, name)

    def build_model(self):
        self.builds += 1
        return self.make() if self.make else self.workload.build_model()


def _fresh(seed=3):
    """What a process without a search's folder builds, and its next random draw."""
    model = build_seeded(get_workload("mlp"), seed)
    return model.state_dict(), torch.rand(4)


def test_the_first_slow_build_is_saved_and_later_processes_load_it(tmp_path, monkeypatch):
    monkeypatch.delenv(WEIGHTS_DIR, raising=False)
    expected, draw = _fresh()
    monkeypatch.setenv(WEIGHTS_DIR, str(tmp_path))
    monkeypatch.setattr(weights, "SAVE_AFTER_S", 0.0)  # as if building took seconds
    counted = Counted(get_workload("mlp"))
    build_seeded(counted, 3)
    assert counted.builds == 1 and len(list(tmp_path.glob("*.pt"))) == 1
    torch.manual_seed(99)  # whatever ran before, the load sets the state a build leaves
    loaded = build_seeded(counted, 3)
    assert counted.builds == 1  # loaded, not built
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in expected.items())
    assert torch.equal(torch.rand(4), draw)


def test_a_quick_build_is_not_saved(tmp_path, monkeypatch):
    monkeypatch.setenv(WEIGHTS_DIR, str(tmp_path))
    build_seeded(get_workload("mlp"), 0)  # milliseconds: under SAVE_AFTER_S
    assert not list(tmp_path.iterdir())


def test_a_damaged_file_or_a_model_that_does_not_pickle_is_built_as_usual(tmp_path, monkeypatch):
    monkeypatch.delenv(WEIGHTS_DIR, raising=False)
    expected, draw = _fresh()
    monkeypatch.setenv(WEIGHTS_DIR, str(tmp_path))
    monkeypatch.setattr(weights, "SAVE_AFTER_S", 0.0)
    counted = Counted(get_workload("mlp"))
    (tmp_path / "mlp-seed3.pt").write_bytes(b"half a file")
    model = build_seeded(counted, 3)
    assert counted.builds == 1
    assert all(torch.equal(model.state_dict()[k], v) for k, v in expected.items())
    assert torch.equal(torch.rand(4), draw)

    def unpicklable():
        module = nn.Linear(2, 2)
        module.hook = lambda x: x  # a lambda does not pickle
        return module

    odd = Counted(get_workload("mlp"), make=unpicklable)
    odd.name = "odd"
    assert isinstance(build_seeded(odd, 0), nn.Linear)
    assert not list(tmp_path.glob("odd*"))  # nothing half-written left behind


def test_a_process_that_trains_its_loaded_model_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    """The file is mapped, privately: a later process loads the weights the first one saved."""
    monkeypatch.setenv(WEIGHTS_DIR, str(tmp_path))
    monkeypatch.setattr(weights, "SAVE_AFTER_S", 0.0)
    saved = {k: v.clone() for k, v in build_seeded(get_workload("mlp"), 5).state_dict().items()}
    model = build_seeded(get_workload("mlp"), 5)  # loaded from the file
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)  # as a training step writes its weights in place
    again = build_seeded(get_workload("mlp"), 5).state_dict()
    assert all(torch.equal(again[k], v) for k, v in saved.items())
