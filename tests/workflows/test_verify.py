"""`accelbench verify`: training on digits per device and precision, judged against CPU fp32."""

import json
import textwrap
from dataclasses import replace

import pytest
import torch

from accelbench.analysis.compare import DEVICE, compare
from accelbench.analysis.facts import Verification
from accelbench.core.result import Result, RunSpec
from accelbench.devices import find_device
from accelbench.errors import UsageError
from accelbench.render.console import results_table, verify_table
from accelbench.store.db import Store
from accelbench.workflows.verify import (
    MIN_BASELINE_ACCURACY,
    Settings,
    check_workload,
    digits_for,
    judge_against_baseline,
    load_digits,
    runs_to_verify,
    shape_inputs,
    verify_loaded,
    verify_one,
)
from accelbench.workloads import get_workload
from accelbench.workloads.custom import ModelOptions, load_custom
from tests.conftest import run_cli

# A small CNN that learns digits in a few epochs on two cores, and the same network with a
# "backend bug": whatever runs in reduced precision comes out as zeros.
MODELS = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Small(nn.Module):
        def __init__(self, broken=False):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.pool = nn.AdaptiveAvgPool2d(4)
            self.fc = nn.Linear(8 * 16, 10)
            self.broken = broken

        def forward(self, x):
            h = self.pool(torch.relu(self.conv(x)))
            if self.broken and h.dtype != torch.float32:  # autocast is on
                h = h * 0
            return self.fc(h.flatten(1))


    def small():
        return Small()


    def broken_in_low_precision():
        return Small(broken=True)
    """
)
SMALL = ("--input-shape", "3x12x12", "--num-classes", "10", "--lr", "0.1", "--batch-size", "64")
SMALL += ("--epochs", "4")


@pytest.fixture
def models(tmp_path):
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    return path


BASELINE_CORRECT = "1" * 342 + "0" * 18  # 95% of the 360 held-out images


def _correct(lost=0, gained=0, base=BASELINE_CORRECT):
    """The baseline's per-image results with `lost` of its right images wrong and `gained` of
    its wrong images right."""
    right, wrong = base.count("1"), base.count("0")
    return "1" * (right - lost) + "0" * lost + "1" * gained + "0" * (wrong - gained)


def _facts(curve, correct=BASELINE_CORRECT):
    accuracy = correct.count("1") / len(correct) if correct else 0.0
    return {"loss_curve": curve, "accuracy": accuracy, "held_out_correct": correct, "epochs": 3}


def _result(device="cpu", precision="fp32", status="ok", error="", **facts):
    spec = RunSpec("w", device, 32, 44, precision=precision)
    return Result(spec=spec, status=status, error=error, metrics={"verify": facts})


BASELINE = _result(**_facts([2.3, 0.6, 0.2]))


def _judged(candidate, settings=None):
    return judge_against_baseline(candidate, BASELINE, settings or Settings()).metrics["verify"]


def test_the_baseline_is_judged_against_itself():
    facts = judge_against_baseline(BASELINE, BASELINE, Settings()).metrics["verify"]
    assert facts["verdict"] == "baseline"
    assert facts["accuracy_diff_points"] == 0 and facts["max_loss_deviation"] == 0


def test_accuracy_within_tolerance_is_ok_and_significantly_below_it_diverges():
    near = _judged(_result("cuda:0", **_facts([2.3, 0.62, 0.21], _correct(lost=2, gained=2))))
    assert near["verdict"] == "ok"
    assert near["accuracy_diff_points"] == pytest.approx(0.0)
    assert near["accuracy_note"] == "+0.0 points, 95% CI -1.4 to +1.4: within tolerance"
    far = _judged(_result("cuda:0", **_facts([2.3, 0.62, 0.21], _correct(lost=12, gained=1))))
    assert far["verdict"] == "diverges"
    assert far["paired"]["reference_only"] == 12 and far["paired"]["candidate_only"] == 1
    assert far["reasons"] == [
        "held-out accuracy worse: -3.1 points, 95% CI -5.4 to -1.1, beyond the tolerance of 2 "
        "(12 of 360 images right only on CPU fp32, 1 only on this run)"
    ]
    # the same run passes a looser tolerance, which the interval rules out
    loose = _judged(_result(**_facts([2.3, 0.62, 0.21], _correct(12, 1))), Settings(tolerance=6))
    assert loose["verdict"] == "ok"


def test_a_final_loss_beyond_tolerance_diverges_even_at_equal_accuracy():
    # 0.6 against 0.2 is 0.4 off, 17% of the baseline's first-epoch loss of 2.3
    facts = _judged(_result("mps", **_facts([2.3, 0.9, 0.6])))
    assert facts["verdict"] == "diverges"
    assert facts["final_loss_deviation"] == pytest.approx(0.4 / 2.3)
    assert "final loss off by 17.4% of CPU fp32's first-epoch loss" in facts["reasons"][0]
    # the largest gap along the curve is reported, not judged: mid-training paths differ
    mid = _judged(_result("mps", **_facts([2.3, 1.2, 0.22])))
    assert mid["verdict"] == "ok" and mid["max_loss_deviation"] == pytest.approx(0.6 / 2.3)


def test_a_loss_that_is_not_finite_diverges():
    facts = _judged(_result("mps", precision="fp16", **_facts([2.3, None, None], _correct(300))))
    assert facts["verdict"] == "diverges"
    assert facts["reasons"] == ["the training loss is not finite from epoch 2"]


def test_a_baseline_that_learned_too_little_makes_the_rest_inconclusive():
    weak = _result(**_facts([2.3, 2.2, 2.1], "1" * 252 + "0" * 108))  # 70%
    assert (
        judge_against_baseline(weak, weak, Settings()).metrics["verify"]["verdict"]
        == "inconclusive"
    )
    other = judge_against_baseline(
        _result("cuda:0", **_facts([2.3, 2.2, 2.1], "1" * 144 + "0" * 216)), weak, Settings()
    )
    facts = other.metrics["verify"]
    assert facts["verdict"] == "inconclusive"
    assert (
        "CPU fp32 reached only 70.0% held-out accuracy (under 90%)"
        in (facts["inconclusive_because"])
    )
    assert "held-out accuracy worse: -30.0 points" in facts["reasons"][0]  # shown, not decisive
    table = verify_table([judge_against_baseline(weak, weak, Settings()), other], width=300)
    assert table.count("CPU fp32 reached only 70.0%") == 1  # said once, not on every row
    assert "INCONCLUSIVE (differs anyway: held-out accuracy worse: -30.0 points" in table


def test_a_failed_baseline_leaves_nothing_to_compare_against():
    failed = _result(status="oom", error="OutOfMemoryError: no", **_facts([], ""))
    facts = judge_against_baseline(_result("cuda:0", **_facts([2.3, 0.6, 0.2])), failed, Settings())
    assert facts.metrics["verify"]["verdict"] == "inconclusive"
    assert "CPU fp32 ended with oom" in facts.metrics["verify"]["inconclusive_because"]
    assert judge_against_baseline(failed, failed, Settings()).metrics["verify"]["verdict"] == "oom"


def test_digits_split_the_same_way_every_time():
    a, b = load_digits(), load_digits()
    assert len(a.train_y) == 1437 and len(a.test_y) == 360
    assert torch.equal(a.test_x, b.test_x) and torch.equal(a.train_y, b.train_y)
    assert set(a.test_y.tolist()) == set(range(10))
    assert a.train_x.shape[1:] == (1, 8, 8)
    assert a.train_x.min() == -1 and a.train_x.max() == 1


def test_inputs_are_resized_and_the_gray_channel_replicated():
    images = load_digits().test_x[:4]
    shaped = shape_inputs(images, (3, 64, 64))
    assert shaped.shape == (4, 3, 64, 64)
    assert torch.equal(shaped[:, 0], shaped[:, 2])
    assert torch.equal(shape_inputs(images, (1, 8, 8)), images)  # same size: unchanged


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("mlp", "verify needs a classifier: mlp has no classes"),
        ("bert-base", "bert-base takes inputs of shape 128 (token ids or flat features)"),
    ],
)
def test_workloads_that_cannot_learn_digits_are_refused(name, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_workload(get_workload(name))


def test_a_head_with_fewer_than_ten_classes_is_refused(models):
    workload = load_custom(f"{models}:small", ModelOptions(input_shape=(3, 12, 12), num_classes=10))
    workload.num_classes = 5
    with pytest.raises(UsageError, match="has 5 classes; it needs 10 or more"):
        check_workload(workload)
    check_workload(get_workload("resnet50"))  # 1,000 classes: labels 0-9 as they are


def test_a_batch_larger_than_the_training_set_is_refused():
    with pytest.raises(UsageError, match="a batch of 2000 is more than the 1437 training"):
        digits_for(get_workload("seed-cnn"), Settings(batch_size=2000))


def _unavailable_gpu():
    # whether or not this machine has one
    return replace(find_device("cuda"), name="cuda:7", available=False, reason="none here")


def test_the_cpu_baseline_runs_first_even_when_not_listed():
    gpu = _unavailable_gpu()
    runs = runs_to_verify([gpu], ["bf16", "fp32"])
    assert [(d.name, p) for d, p in runs] == [
        ("cpu", "fp32"),
        ("cuda:7", "bf16"),
        ("cuda:7", "fp32"),
    ]
    cpu = find_device("cpu")
    assert [(d.name, p) for d, p in runs_to_verify([cpu], ["bf16", "fp32"])] == [
        ("cpu", "fp32"),
        ("cpu", "bf16"),
    ]


def test_an_unavailable_device_becomes_a_failed_row_without_training(models):
    workload = load_custom(f"{models}:small", ModelOptions(input_shape=(3, 12, 12), num_classes=10))
    gpu = _unavailable_gpu()
    result = verify_one(workload, gpu, "fp32", load_digits(), Settings())
    assert result.status == "error"
    assert result.error == "cuda:7 is not available here: none here"
    verified = result.facts.get(Verification)
    assert verified is not None and verified.loss_curve is None


def test_verify_trains_each_run_from_the_same_start(models):
    workload = load_custom(f"{models}:small", ModelOptions(input_shape=(3, 12, 12), num_classes=10))
    settings = Settings(epochs=4, lr=0.1, batch_size=64)
    cpu = find_device("cpu")
    first, again = (verify_loaded(workload, [cpu], ["fp32"], settings) for _ in range(2))
    facts = first[0].facts.get(Verification)
    repeated = again[0].facts.get(Verification)
    assert facts is not None and facts.loss_curve is not None and len(facts.loss_curve) == 4
    assert repeated is not None and facts.loss_curve == repeated.loss_curve  # deterministic
    assert (facts.loss_curve[-1] or 0) < (facts.loss_curve[0] or 0)  # it learns
    assert facts.accuracy is not None and facts.accuracy >= MIN_BASELINE_ACCURACY
    assert first[0].spec.steps_per_block == 1437 // 64  # an epoch of full batches
    table = verify_table(first)
    assert "baseline" in table and "loss per epoch:" in table


def test_cli_verify_runs_end_to_end_and_stores_the_runs(models, tmp_path):
    db = tmp_path / "v.db"
    args = ("verify", "--model", f"{models}:small", *SMALL, "--devices", "cpu")
    out = run_cli(*args, "--precisions", "fp32,bf16", "--json", "--db", str(db))
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    runs = [(r["spec"]["device"], r["spec"]["precision"]) for r in payload["results"]]
    assert runs == [("cpu", "fp32"), ("cpu", "bf16")]
    verdicts = [r["metrics"]["verify"]["verdict"] for r in payload["results"]]
    assert verdicts == ["baseline", "ok"]
    bf16 = payload["results"][1]["metrics"]["verify"]
    assert len(bf16["loss_curve"]) == 4 and abs(bf16["accuracy_diff_points"]) <= 2
    assert len(bf16["held_out_correct"]) == 360 and bf16["paired"]["images"] == 360
    assert "samples_s" not in payload["results"][0]  # no timing: not a benchmark result
    with Store(db, create=False) as store:
        stored = store.results()[::-1]
    assert [r.status for r in stored] == ["ok", "ok"]
    assert {r.sweep for r in stored} == {payload["sweep"]}
    assert stored[1].facts.get(Verification) == Verification.from_metrics({"verify": bf16})
    listed = results_table(stored, width=300)
    assert "verify ok: " in listed and "verify baseline: " in listed
    assert compare(stored, DEVICE).rows == ()  # no timing to compare


def test_cli_verify_flags_a_precision_that_breaks_training(models, tmp_path):
    args = ("verify", "--model", f"{models}:broken_in_low_precision", *SMALL)
    out = run_cli(*args, "--devices", "cpu", "--precisions", "bf16", "--db", str(tmp_path / "v.db"))
    assert out.returncode == 1, out.stderr
    assert "cpu    │ fp32      │" in out.stdout  # the baseline ran, though only bf16 was asked
    (row,) = [line for line in out.stdout.splitlines() if "│ bf16" in line]
    assert "DIVERGES: held-out accuracy" in row
    assert "loss per epoch:" in out.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["seed-cnn", "--accuracy-tolerance", "abc"], "'abc' is not a number of percentage points"),
        (["seed-cnn", "--loss-tolerance", "much"], "'much' is not a percentage"),
        (["seed-cnn", "--devices", "tpu"], "unknown device 'tpu'"),
        (["seed-cnn", "--timeout", "inf"], "must be a number of seconds above 0 and at most"),
        (["seed-cnn", "--timeout", "0"], "must be a number of seconds above 0 and at most 604,800"),
        (["mlp"], "verify needs a classifier: mlp has no classes"),
        ([], "name one workload, or give --model"),
    ],
)
def test_cli_verify_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    db = tmp_path / "v.db"
    out = run_cli("verify", *args, "--db", str(db))
    assert out.returncode == 2
    assert message in out.stderr and out.stderr.count("\n") == 1
    assert not db.exists()  # nothing was created, let alone trained


def test_reports_of_throughput_leave_verify_results_out():
    from accelbench.render import markdown_report

    ok = replace(BASELINE, environment={"host": "h"})
    failed_verify = _result("cuda:0", status="error", error="verify boom")
    failed_run = Result(spec=RunSpec("w", "cpu", 8, 1), status="error", error="run boom")
    text = markdown_report([ok, failed_verify, failed_run])
    assert "run boom" in text  # a failed benchmark is listed as before
    assert "verify boom" not in text and "(train fp32 b32): ok" not in text


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"epochs": 0}, "epochs must be a positive integer, not 0"),
        ({"batch_size": 2.5}, "batch_size must be a positive integer, not 2.5"),
        ({"lr": 0.0}, "lr must be a positive number, not 0.0"),
        ({"tolerance": -1}, "tolerance must be 0 or more, not -1"),
    ],
)
def test_verify_settings_check_themselves_as_they_are_made(fields, said):
    from accelbench.errors import UsageError

    with pytest.raises(UsageError, match=said):
        Settings(**fields)


def test_the_library_verifies_from_a_request_and_stores_it(models, tmp_path):
    import accelbench

    request = accelbench.VerifyRequest(
        workload=accelbench.WorkloadRef(
            f"{models}:small", ModelOptions(input_shape=(3, 12, 12), num_classes=10)
        ),
        devices="cpu",
        settings=accelbench.VerifySettings(epochs=1, batch_size=64),
    )
    found = accelbench.verify(request, db=tmp_path / "v.db")
    assert [r.status for r in found] == ["ok"] and found[0].facts.get(Verification) is not None
    assert [r.id for r in Store(tmp_path / "v.db").results()] == [found[0].id]
    with pytest.raises(UsageError, match="unknown precision 'fp8'"):
        accelbench.VerifyRequest(precisions=("fp8",))


def test_a_device_list_that_names_no_device_is_one_line():
    from accelbench.workflows.verify import verify_devices

    with pytest.raises(UsageError, match=r"no device named in ',,'; try cpu, cuda or all"):
        verify_devices(",,")


def test_what_a_runs_worker_left_running_is_said_below_the_table():
    left = ["pid 41 python", "pid 42 sleep"]
    timed_out = _result("cpu", "bf16", status="timeout", error="no result within --timeout 5 s")
    timed_out = replace(timed_out, metrics={**timed_out.metrics, "left_running": left})
    table = verify_table([BASELINE, timed_out], width=300)
    assert "TIMEOUT: no result within --timeout 5 s" in table
    assert (
        "cpu bf16: 2 process(es) started in its worker outlived it (pid 41 python, pid 42 "
        "sleep); they were stopped"
    ) in table
    assert "outlived" not in verify_table([BASELINE], width=300)


def test_a_failed_look_for_what_a_worker_left_is_said_as_unknown_not_as_stopped():
    unchecked = ["unchecked: OSError: [Errno 22] faked clock"]
    run = _result("cpu", "bf16")
    run = replace(run, metrics={**run.metrics, "left_running": unchecked})
    table = verify_table([BASELINE, run], width=300)
    assert "cpu bf16: whether its worker left processes running is unknown (OSError: " in table
    assert "outlived" not in table
