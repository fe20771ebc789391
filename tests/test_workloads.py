import pytest
import torch

from accelbench.errors import WorkloadError
from accelbench.workloads import Workload, get_workload, list_workloads, register
from accelbench.workloads.seed import SeedCNN


@pytest.mark.parametrize("workload", list_workloads(), ids=lambda w: w.name)
def test_every_workload_trains_on_the_cpu(workload):
    """Each registered workload builds its parts and runs a timed block's steps."""
    run_block = workload.prepare(torch.device("cpu"))
    run_block()
    assert workload.describe()["name"] == workload.name


def test_seed_cnn_is_seed_000s_network():
    model = SeedCNN().build_model()
    # conv1 456 + conv2 2,416 + fc1 324,600 + fc2 10,164 + fc3 850, from seed 000's layer sizes
    assert sum(p.numel() for p in model.parameters()) == 338_486
    inputs, labels = SeedCNN().make_batch(torch.Generator().manual_seed(0))
    assert inputs.shape == (64, 3, 64, 64) and labels.shape == (64,)
    assert model(inputs).shape == (64, 10)
    w = get_workload("seed-cnn")
    assert (w.batch_size, w.steps_per_block, w.default_blocks) == (64, 20, 100)


def test_training_reduces_the_loss():
    w = get_workload("mlp")
    torch.manual_seed(0)
    model = w.build_model()
    optimizer = w.make_optimizer(model)
    batch = w.make_batch(torch.Generator().manual_seed(0))
    first = w.loss(model(batch[0]), batch[1]).item()
    for _ in range(50):
        w.train_step(model, optimizer, batch)
    assert w.loss(model(batch[0]), batch[1]).item() < first


def test_unknown_workload_lists_the_valid_ones():
    with pytest.raises(
        WorkloadError, match="unknown workload 'resnet9000'; valid: .*mlp, seed-cnn"
    ):
        get_workload("resnet9000")


def test_glob_filter():
    assert [w.name for w in list_workloads("seed-*")] == ["seed-cnn"]
    assert list_workloads("nothing*") == []


def test_duplicate_registration_is_an_error():
    with pytest.raises(ValueError, match="registered twice"):
        register(type("Again", (SeedCNN,), {}))

    class Nameless(Workload):
        pass

    with pytest.raises(ValueError, match="no name"):
        register(Nameless)  # type: ignore[type-abstract]
