import pytest
import torch

from accelbench.backends import build
from accelbench.devices import resolve_devices
from accelbench.engine.runner import make_spec
from accelbench.errors import WorkloadError
from accelbench.workloads import Workload, get_workload, list_workloads, register
from accelbench.workloads.seed import SeedCNN

CPU = resolve_devices("cpu")[0]


# The full-size language models would take minutes and gigabytes a step on 2 cores (llama-1b
# trains with 20 GB of AdamW state); gpt2-tiny runs their code, test_generate counts their sizes.
_LARGE_LANGUAGE_MODELS = {"gpt2", "llama-1b", "qwen-0.5b"}


@pytest.mark.parametrize("mode", ["train", "infer"])
@pytest.mark.parametrize(
    "workload",
    [w for w in list_workloads() if w.name not in _LARGE_LANGUAGE_MODELS],
    ids=lambda w: w.name,
)
def test_every_workload_runs_a_step_on_the_cpu(workload, mode):
    """Each registered workload builds, and one step of each mode runs (batch 2 to stay quick)."""
    spec = make_spec(workload, CPU, mode=mode, batch_size=2, steps_per_block=1)
    prep = build(spec, workload, CPU)
    before = [p.detach().clone() for p in prep.model.parameters()][:3]
    prep.step()
    after = [p.detach() for p in prep.model.parameters()][:3]
    changed = any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert changed == (mode == "train")  # training updates weights; inference must not
    assert workload.describe()["name"] == workload.name


def test_seed_cnn_is_seed_000s_network():
    model = SeedCNN().build_model()
    # conv1 456 + conv2 2,416 + fc1 324,600 + fc2 10,164 + fc3 850, from seed 000's layer sizes
    assert sum(p.numel() for p in model.parameters()) == 338_486
    inputs, labels = SeedCNN().make_batch(torch.Generator().manual_seed(0), 64)
    assert inputs.shape == (64, 3, 64, 64) and labels.shape == (64,)
    assert model(inputs).shape == (64, 10)
    w = get_workload("seed-cnn")
    assert (w.batch_size, w.steps_per_block, w.default_blocks) == (64, 20, 100)


def test_training_reduces_the_loss():
    w = get_workload("mlp")
    prep = build(make_spec(w, CPU), w, CPU)
    inputs, targets = prep.batch
    first = w.loss(prep.model(inputs), targets).item()
    for _ in range(50):
        prep.step()
    assert w.loss(prep.model(inputs), targets).item() < first


def test_unknown_workload_lists_the_valid_ones():
    with pytest.raises(
        WorkloadError,
        match=r"unknown workload .resnet9000. \(did you mean resnet50\?\); valid: bert-base, ",
    ):
        get_workload("resnet9000")


def test_glob_filter():
    assert [w.name for w in list_workloads("seed-*")] == ["seed-cnn"]
    assert {w.name for w in list_workloads()} >= {
        "seed-cnn",
        "mlp",
        "resnet50",
        "vgg16",
        "mobilenet_v3_large",
        "bert-base",
    }
    assert list_workloads("nothing*") == []


def test_duplicate_registration_is_an_error():
    with pytest.raises(ValueError, match="registered twice"):
        register(type("Again", (SeedCNN,), {}))

    class Nameless(Workload):
        pass

    with pytest.raises(ValueError, match="no name"):
        register(Nameless)  # type: ignore[type-abstract]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"precision": "fp8"}, "unknown precision 'fp8'; valid: fp32, tf32, fp16, bf16, int8"),
        ({"mode": "stream"}, "unknown mode 'stream'; valid: train, infer, generate, serve"),
        ({"backend": "tvm"}, "unknown backend 'tvm'; valid: torch, onnxruntime"),
        ({"batch_size": 0}, "batch_size must be a positive integer, not 0"),
        ({"batch_size": True}, "batch_size must be a positive integer, not True"),
        ({"colour": "red"}, "registered"),  # neither a field nor a lever: both are named
        ({"compile": "fast"}, "invalid value 'fast'"),
    ],
)
def test_make_spec_refuses_bad_requests_in_one_line_of_the_error_tree(options, said):
    """Issue 28 item 3: make_spec(precision="fp8") was accepted, and a bad name raised
    KeyError outside AccelbenchError."""
    from accelbench.errors import UsageError

    with pytest.raises(UsageError, match=said.replace("(", r"\(")) as caught:
        make_spec(get_workload("seed-cnn"), CPU, **options)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"precision": "fp8"}, "unknown precision 'fp8'; valid: fp32, tf32, fp16, bf16, int8"),
        ({"batch_size": 0}, "batch_size must be a positive integer, not 0"),
        ({"steps_per_block": -1}, "steps_per_block must be a positive integer, not -1"),
        ({"mode_args": (("z", 1), ("a", 2))}, "pairs sorted by name, each once"),
    ],
)
def test_a_run_spec_checks_its_own_precision_and_sizes(fields, said):
    """RunSpec checks itself as it is made, so a spec built anywhere (a lever's assign, a
    library caller) is as checked as make_spec's; `replace` checks again."""
    from dataclasses import replace

    from accelbench.core.result import RunSpec
    from accelbench.errors import UsageError

    base = RunSpec("mlp", "cpu", 8, 1)
    with pytest.raises(UsageError, match=said.replace("(", r"\(")):
        RunSpec(**{**base.to_dict(), **fields})
    with pytest.raises(UsageError, match=said.replace("(", r"\(")):
        replace(base, **fields)


def test_a_stored_spec_outside_the_vocabulary_is_a_damaged_record_not_a_usage_error():
    from accelbench.core.result import RunSpec

    data = {**RunSpec("mlp", "cpu", 8, 1).to_dict(), "precision": "fp8"}
    with pytest.raises(ValueError, match="spec: unknown precision 'fp8'"):
        RunSpec.from_dict(data)


def test_each_closed_vocabulary_is_its_literal_type():
    from typing import get_args

    from accelbench.core import vocab

    for words, kind in (
        (vocab.PRECISIONS, vocab.Precision),
        (vocab.STATUSES, vocab.Status),
        (vocab.EXPORT_TARGETS, vocab.ExportTarget),
    ):
        assert words == get_args(kind) and len(set(words)) == len(words)
