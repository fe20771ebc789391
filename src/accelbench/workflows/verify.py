"""`accelbench verify`: does each device and precision train the model as CPU fp32 does?

Every run trains the workload's model from the same initial weights (seed 0), with the
workload's own optimizer (its learning rate optionally replaced), on the same real data in the
same order: scikit-learn's digits (1,797 8x8 grayscale images of 0-9), split once into 1,437
training and 360 held-out images by a seeded permutation. The images are scaled to [-1, 1],
resized bilinearly to the workload's input size on the CPU and their gray channel replicated to
its channels, so every device receives the same bytes. A workload with more than 10 classes
(resnet50's 1,000) keeps its head and sees labels 0-9 only; accuracy is the argmax over the
whole head. Workloads that take no images (token ids, regression) are refused.

The precision's autocast and fp16's GradScaler come from the same `build` as the benchmark's,
and each step is `modes.train_function`. Each device and precision trains in a worker process
of its own (engine/worker's `call_isolated`), one after another, under `--timeout`: the model is
the user's code, and it may exit, crash, hang or fork; whatever it started ends with its
worker. A failure (an unavailable device, OOM, an exception, a worker that died or ran out of
time) becomes a row with its message, and the rows already stored stay.

The CPU at fp32 is the baseline and always runs first. Each run keeps which held-out images it
got right, so accuracy is compared image by image (analysis/paired: a paired 95% interval of the
difference) and one-sided: another run diverges when its held-out accuracy is significantly
lower than the baseline's (the interval below zero) by more than the tolerance (percentage
points), when its final-epoch mean training loss differs from the baseline's by more than the
loss tolerance, or when its loss stops being finite. A better run never diverges; one whose
interval reaches below minus the tolerance without being significantly worse by that much is
"undetermined": 360 images cannot tell. Loss differences are fractions of the baseline's first-epoch
loss, the scale training starts from, so that two well-trained runs ending at 0.01 and 0.02 are
not called diverging. A baseline that learns too little (held-out accuracy under 90%) makes
every verdict "inconclusive": while a model is still learning, two runs differ by chance (the
rounding of one precision sends training down another path) more than by device, and agreeing
with an untrained model proves nothing.

Results are stored as ordinary results (mode "train", backend "torch") that carry no
measurement and a verify record in their metrics (under `analysis.facts.VERIFY`), which marks
them as verify runs; `result.facts.get(Verification)` reads it. That needs no schema change:
throughput comparisons and charts already skip results without a measurement, and the result
list and reports tell verify results from failures by that key.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from ..analysis.facts import LEFT_RUNNING, VERIFY, Verification
from ..analysis.paired import UNDETERMINED, WITHIN, WORSE, paired_accuracy
from ..backends.pytorch import build_torch
from ..core.result import Result, RunSpec
from ..core.vocab import DEFAULT_WORKLOAD, PRECISIONS, Precision
from ..devices import BASELINE_DEVICE, HOST_DEVICE, OUT_OF_MEMORY, Device, find_device
from ..devices.fingerprint import fingerprint
from ..engine.runner import make_spec
from ..engine.worker import call_isolated, planning_workload
from ..errors import AccelbenchError, UsageError, one_line, require
from ..levers import unsupported_reason
from ..modes.train import Train, train_function
from ..workloads import Workload, WorkloadRef, load_workload
from . import inputs

__all__ = [
    "BASELINE",
    "DEFAULT_TIMEOUT_S",
    "MIN_BASELINE_ACCURACY",
    "Digits",
    "Prepared",
    "Settings",
    "check_workload",
    "judge_against_baseline",
    "load_digits",
    "digits_for",
    "prepare",
    "runs_to_verify",
    "VerifyRequest",
    "verify",
    "verify_devices",
    "verify_loaded",
    "verify_one",
    "verify_prepared",
]

BASELINE = (BASELINE_DEVICE, "fp32")
CLASSES = 10  # the digits 0-9
HELD_OUT = 360  # about 20% of the 1,797 images
SPLIT_SEED = 0
MIN_BASELINE_ACCURACY = 0.9  # below it the baseline is still learning: runs differ by chance
FAILED = ("error", "oom", "timeout")
# Each device and precision's worker, from its start: 5 epochs of resnet50 on a 2-core CPU are
# about 12 minutes; a model that hangs is stopped after this.
DEFAULT_TIMEOUT_S = 1800.0


@dataclass(frozen=True, kw_only=True)
class Settings:
    """How to train and how strictly to judge."""

    epochs: int = 5
    batch_size: int | None = None  # None: the workload's
    lr: float | None = None  # None: the workload's optimizer as it is
    tolerance: float = 2.0  # held-out accuracy, percentage points
    loss_tolerance: float = 0.1  # final loss, as a fraction of the baseline's first-epoch loss
    seed: int = 0  # the initial weights

    def __post_init__(self) -> None:
        """Checked as made (UsageError, one line): the library's callers skip the parser."""
        for name, value in (("epochs", self.epochs), ("batch_size", self.batch_size)):
            if value is not None and (type(value) is not int or value < 1):
                raise UsageError(f"{name} must be a positive integer, not {value!r}")
        if self.lr is not None and not self.lr > 0:
            raise UsageError(f"lr must be a positive number, not {self.lr!r}")
        for name, share in (("tolerance", self.tolerance), ("loss_tolerance", self.loss_tolerance)):
            if not share >= 0:
                raise UsageError(f"{name} must be 0 or more, not {share!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "epochs": self.epochs,
            "lr": self.lr,
            "tolerance_points": self.tolerance,
            "loss_tolerance": self.loss_tolerance,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Digits:
    """scikit-learn's digits on the CPU: N x 1 x 8 x 8 images in [-1, 1] and labels 0-9."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor

    def describe(self, shape: Sequence[int]) -> str:
        size = "x".join(map(str, shape))
        return (
            f"scikit-learn digits: {len(self.train_y)} training and {len(self.test_y)} held-out "
            f"8x8 images, resized to {size}"
        )


def load_digits() -> Digits:
    """The digits, split the same way every time."""
    datasets = require("sklearn.datasets", "verify", "verify's digits data set", "scikit-learn")
    data = datasets.load_digits()
    images = torch.tensor(data.images, dtype=torch.float32)[:, None] / 8.0 - 1.0  # 0-16 -> -1-1
    labels = torch.tensor(data.target, dtype=torch.long)
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(SPLIT_SEED))
    test, train = order[:HELD_OUT], order[HELD_OUT:]
    return Digits(images[train], labels[train], images[test], labels[test])


def check_workload(workload: Workload) -> None:
    """UsageError, in one line, unless the workload is an image classifier of 10+ classes
    whose forward takes the one image tensor."""
    name = workload.name
    if workload.num_classes is None:
        raise UsageError(
            f"verify needs a classifier: {name} has no classes (a regression loss), so "
            "held-out accuracy on digits means nothing"
        )
    if workload.several_inputs:
        raise UsageError(
            f"verify trains on images (digits), the model's one input: {name}'s forward takes "
            "several inputs; verify a model that takes one CxHxW image tensor"
        )
    if not workload.images:
        shape = "x".join(map(str, workload.input_shape)) or "?"
        raise UsageError(
            f"verify trains on images (digits): {name} takes inputs of shape {shape} "
            "(token ids or flat features), not CxHxW images"
        )
    if workload.num_classes < CLASSES:
        raise UsageError(
            f"verify trains on the 10 digits: {name} has {workload.num_classes} classes; "
            "it needs 10 or more"
        )


def digits_for(workload: Workload, settings: Settings) -> Digits:
    """The data, once the workload and batch size are known to fit it (UsageError if not)."""
    check_workload(workload)
    data = load_digits()
    batch = settings.batch_size or workload.batch_size
    if batch > len(data.train_y):
        raise UsageError(f"a batch of {batch} is more than the {len(data.train_y)} training images")
    return data


def shape_inputs(images: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """N x 1 x 8 x 8 digits to N x C x H x W: resized bilinearly, gray replicated to C."""
    channels, height, width = shape
    resized = F.interpolate(images, size=(height, width), mode="bilinear", align_corners=False)
    return resized.expand(-1, channels, -1, -1).contiguous()


def runs_to_verify(
    devices: Sequence[Device], precisions: Sequence[str]
) -> list[tuple[Device, str]]:
    """The baseline first (the CPU at fp32, listed or not), then every device x precision."""
    cpu = next((d for d in devices if d.is_host), None)
    if cpu is None:
        cpu = find_device(BASELINE_DEVICE)
    runs = [(cpu, BASELINE[1])]
    for device in devices:
        runs += [(device, p) for p in precisions if (device.name, p) != BASELINE]
    return runs


@dataclass(frozen=True)
class Training:
    """What one training run produced."""

    curve: tuple[float, ...]  # mean training loss of each epoch
    correct: str  # per held-out image, in order: "1" right, "0" wrong
    optimizer: str  # e.g. "SGD lr 0.01"

    @property
    def accuracy(self) -> float:  # held-out, 0 to 1
        return self.correct.count("1") / len(self.correct)


def train(
    spec: RunSpec,
    workload: Workload,
    device: Device,
    data: Digits,
    settings: Settings,
    on_epoch: Callable[[int], None] | None = None,
) -> Training:
    """Train `spec` on the digits for `settings.epochs` and test on the held-out images."""
    prep = build_torch(spec, workload, device, seed=settings.seed)
    assert prep.optimizer is not None
    if settings.lr is not None:
        for group in prep.optimizer.param_groups:
            group["lr"] = settings.lr
    step = train_function(prep)
    optimizer = f"{type(prep.optimizer).__name__} lr {prep.optimizer.param_groups[0]['lr']:g}"
    target = device.torch_device
    order = torch.Generator().manual_seed(settings.seed)  # the same batches everywhere
    batch, count = spec.batch_size, len(data.train_y)
    curve = []
    for epoch in range(settings.epochs):
        shuffled = torch.randperm(count, generator=order)
        total = torch.zeros((), device=target)
        steps = 0
        for start in range(0, count - batch + 1, batch):  # full batches only
            index = shuffled[start : start + batch]
            inputs = shape_inputs(data.train_x[index], workload.input_shape)
            loss = step(inputs.to(target), data.train_y[index].to(target))
            total += loss.detach().float()
            steps += 1
        curve.append(float(total.item()) / steps)  # one wait for the device per epoch
        if on_epoch is not None:
            on_epoch(epoch + 1)
    return Training(tuple(curve), _held_out_correct(prep, workload, data, batch), optimizer)


def _held_out_correct(prep: Any, workload: Workload, data: Digits, batch: int) -> str:
    """Which held-out images the model gets right, one "1" or "0" each: kept per image so that
    two runs are compared on the same images (a paired test), not by their totals."""
    model, target = prep.model.eval(), prep.device.torch_device
    hits = []
    with torch.inference_mode(), prep.autocast():
        for start in range(0, len(data.test_y), batch):
            inputs = shape_inputs(data.test_x[start : start + batch], workload.input_shape)
            predicted = workload.forward(model, inputs.to(target)).argmax(dim=1).cpu()
            hits.append(predicted == data.test_y[start : start + batch])
    return "".join("1" if hit else "0" for hit in torch.cat(hits).tolist())


def verify_one(
    workload: Workload,
    device: Device,
    precision: str,
    data: Digits,
    settings: Settings,
    on_epoch: Callable[[int], None] | None = None,
) -> Result:
    """One device and precision trained, in this process (a worker's, or a test's); failures
    come back as a Result with their message."""
    base = _row(workload, device, precision, data, settings)
    if not device.available:
        return replace(base, error=f"{device.name} is not available here: {device.reason}")
    base = replace(base, environment=fingerprint(device))
    reason = unsupported_reason(base.spec, device, workload)
    if reason:
        return replace(base, status="unsupported", error=reason)
    try:
        with device.context():
            trained = train(base.spec, workload, device, data, settings, on_epoch)
    except OUT_OF_MEMORY as exc:
        return replace(base, status="oom", error=one_line(exc))
    except Exception as exc:  # a failure is data: the other runs go on
        return replace(base, error=one_line(exc))
    facts = {
        **base.metrics[VERIFY],
        "optimizer": trained.optimizer,
        "loss_curve": [_finite(x) for x in trained.curve],
        "accuracy": trained.accuracy,
        "held_out_correct": trained.correct,
    }
    return replace(base, status="ok", metrics={VERIFY: facts})


def _row(
    workload: Workload, device: Device, precision: str, data: Digits, settings: Settings
) -> Result:
    """A run's row before it trains: its spec and settings, status "error", and the host's
    environment (the device's own once the run reaches it). It runs none of the model."""
    batch = settings.batch_size or workload.batch_size
    spec = make_spec(
        workload,
        device,
        mode=Train.name,
        precision=precision,
        batch_size=batch,
        steps_per_block=len(data.train_y) // batch,  # one "block" is one epoch here
    )
    facts = {**settings.to_dict(), "data": data.describe(workload.input_shape)}
    environment = {
        **fingerprint(find_device(HOST_DEVICE)),  # the host ran the command
        "device": device.name,
        "device_model": device.model if device.available else "",
    }
    return Result(spec=spec, status="error", metrics={VERIFY: facts}, environment=environment)


def _finite(x: float) -> float | None:
    """JSON has no NaN or infinity: a loss that is not finite is stored as null."""
    return x if math.isfinite(x) else None


def judge_against_baseline(result: Result, baseline: Result, settings: Settings) -> Result:
    """`result` with its comparison to the baseline and its verdict in its verify record:
    baseline, ok, undetermined (the held-out images cannot tell a drop of the tolerance's size
    from chance; with "accuracy_note"), diverges (with "reasons"), inconclusive (with
    "inconclusive_because" and any "reasons" found anyway), or the status of a failed run."""
    facts = {**result.metrics[VERIFY], "is_baseline": result is baseline}  # the record, updated
    own = result.facts.get(Verification)
    if result.status != "ok" or own is None:
        facts["verdict"] = result.status
        return replace(result, metrics={**result.metrics, VERIFY: facts})
    curve = own.loss_curve or ()
    deviations = _deviations(own, baseline, settings)
    facts.update(deviations)
    problem = _baseline_problem(baseline)
    if None in curve:
        reason = f"the training loss is not finite from epoch {curve.index(None) + 1}"
        facts["verdict"], facts["reasons"] = "diverges", [reason]
    elif problem:
        # Differences found anyway are shown, but cannot be told from chance.
        found = _divergence(deviations, settings) if deviations else []
        facts["verdict"], facts["inconclusive_because"] = "inconclusive", problem
        if found:
            facts["reasons"] = found
    elif result is baseline:
        facts["verdict"] = "baseline"
    else:
        reasons = _divergence(deviations, settings)
        undetermined = deviations["accuracy_judgement"] == UNDETERMINED
        facts["verdict"] = "diverges" if reasons else "undetermined" if undetermined else "ok"
        if reasons:
            facts["reasons"] = reasons
    return replace(result, metrics={**result.metrics, VERIFY: facts})


def _baseline_problem(baseline: Result) -> str | None:
    """Why the baseline cannot be compared against, or None."""
    base = baseline.facts.get(Verification)
    if baseline.status != "ok" or base is None:
        return f"no baseline: CPU fp32 ended with {baseline.status}: {baseline.error}"
    if base.loss_curve is None or None in base.loss_curve:
        return "no baseline: CPU fp32's own training loss is not finite"
    if base.accuracy is None or base.accuracy < MIN_BASELINE_ACCURACY:
        reached = "no" if base.accuracy is None else f"only {base.accuracy:.1%}"
        return (
            f"CPU fp32 reached {reached} held-out accuracy (under "
            f"{MIN_BASELINE_ACCURACY:.0%}): while a model is still learning, runs differ by "
            "chance more than by device; raise --epochs or --lr"
        )
    return None


def _divergence(facts: dict[str, Any], settings: Settings) -> list[str]:
    """Why a finite run strays from a sound baseline: accuracy significantly lower by more than
    the tolerance (a better run never strays), or final loss off."""
    reasons = []
    if facts["accuracy_judgement"] == WORSE:
        reasons.append(f"held-out accuracy {facts['accuracy_note']}")
    final = facts["final_loss_deviation"]
    if final > settings.loss_tolerance:
        reasons.append(
            f"final loss off by {final:.1%} of CPU fp32's first-epoch loss "
            f"(tolerance {settings.loss_tolerance:.0%})"
        )
    return reasons


def _deviations(own: Verification, baseline: Result, settings: Settings) -> dict[str, Any]:
    """Accuracy in points, its paired comparison and loss deviations (fractions of the
    baseline's first-epoch loss) against the baseline, as the verify record stores them; empty
    when either curve is missing or not finite."""
    base = baseline.facts.get(Verification)
    if baseline.status != "ok" or base is None:
        return {}
    curve, base_curve = own.loss_curve, base.loss_curve
    if curve is None or base_curve is None or None in curve or None in base_curve:
        return {}
    if own.accuracy is None or base.accuracy is None:
        return {}
    scale = abs(base_curve[0] or 0.0) or 1.0
    gaps = [abs((a or 0.0) - (b or 0.0)) / scale for a, b in zip(curve, base_curve, strict=True)]
    return {
        "baseline": {"device": baseline.spec.device, "precision": baseline.spec.precision},
        "accuracy_diff_points": 100 * (own.accuracy - base.accuracy),
        **_paired(own, base, settings.tolerance),
        "final_loss_deviation": gaps[-1],
        "max_loss_deviation": max(gaps),
    }


def _paired(own: Verification, base: Verification, tolerance_points: float) -> dict[str, Any]:
    """The run against the baseline on the same held-out images: the 2x2 counts, the paired
    95% interval of the difference, the judgement against the tolerance and its sentence."""
    try:
        table = paired_accuracy(own.held_out_correct, base.held_out_correct)
    except ValueError as exc:  # records written without per-image results
        return {"accuracy_judgement": UNDETERMINED, "accuracy_note": f"undetermined: {exc}"}
    judgement = table.judge(tolerance_points / 100)
    low, high = (100 * x for x in table.interval())
    figures = f"{100 * table.difference:+.1f} points, 95% CI {low:+.1f} to {high:+.1f}"
    if judgement == WITHIN:
        note = f"{figures}: within tolerance"
    elif judgement == WORSE:
        note = (
            f"worse: {figures}, beyond the tolerance of {tolerance_points:g} "
            f"({table.reference_only} of {table.images} images right only on CPU fp32, "
            f"{table.candidate_only} only on this run)"
        )
    else:
        note = (
            f"undetermined: {figures}: {table.images} held-out images cannot tell whether it "
            f"is worse by {tolerance_points:g} points"
        )
    return {"paired": table.to_dict(), "accuracy_judgement": judgement, "accuracy_note": note}


@dataclass(frozen=True, kw_only=True)
class VerifyRequest:
    """What `accelbench verify` trains: one workload on each device and precision, each in a
    worker that is stopped `timeout` seconds after it is ready."""

    workload: WorkloadRef = WorkloadRef(DEFAULT_WORKLOAD)
    devices: str = "all"  # comma-separated names, or "all" (the available ones)
    precisions: tuple[Precision, ...] = ("fp32",)
    settings: Settings = Settings()
    timeout: float = DEFAULT_TIMEOUT_S  # seconds, for each device and precision's worker

    def __post_init__(self) -> None:
        # a workload by name, a device or precision or several (workflows/inputs)
        object.__setattr__(self, "workload", inputs.workload_ref("workload", self.workload))
        object.__setattr__(self, "devices", inputs.device_names("devices", self.devices))
        object.__setattr__(self, "precisions", inputs.names("precisions", self.precisions))
        bad = [p for p in self.precisions if p not in PRECISIONS]
        if bad or not self.precisions:
            shown = bad[0] if bad else "none"
            raise UsageError(f"unknown precision {shown!r}; valid: {', '.join(PRECISIONS)}")
        number = isinstance(self.timeout, (int, float)) and not isinstance(self.timeout, bool)
        if not (number and math.isfinite(self.timeout) and self.timeout > 0):
            raise UsageError(
                f"timeout must be a finite number of seconds above 0, not {self.timeout!r}"
            )


@dataclass(frozen=True)
class Prepared:
    """A request checked and planned, before anything is trained or stored: the workload as
    the command knows it (a `--model` described by a worker that loaded and checked it), the
    digits, the devices, and the runs in order (the CPU fp32 baseline first)."""

    request: VerifyRequest
    workload: Workload
    data: Digits
    devices: list[Device]
    runs: list[tuple[Device, str]]


def prepare(request: VerifyRequest) -> Prepared:
    """Check every input (one line, an AccelbenchError): the model loads and takes its inputs
    (in a worker, under the request's timeout), learns digits, fits the batch; the devices."""
    workload = planning_workload(request.workload, request.timeout, check=True)
    data = digits_for(workload, request.settings)
    devices = verify_devices(request.devices)
    return Prepared(request, workload, data, devices, runs_to_verify(devices, request.precisions))


def verify(
    request: VerifyRequest,
    *,
    db: str | Path | None = None,
    on_epoch: Callable[[Device, str, int], None] | None = None,
) -> list[Result]:
    """`accelbench verify` as a function: check the request (`prepare`), train the workload on
    each device and precision, each in a worker process, and return the judged Results (each
    stored in `db` as it lands, when given). The model never runs in the calling process."""
    from ..store.db import Store

    prepared = prepare(request)
    if db is None:
        return verify_prepared(prepared, on_epoch=on_epoch)
    with Store(db) as store:
        return verify_prepared(prepared, store.save, on_epoch)


def verify_prepared(
    prepared: Prepared,
    on_result: Callable[[Result], Result] | None = None,
    on_epoch: Callable[[Device, str, int], None] | None = None,
) -> list[Result]:
    """Train each of `prepared`'s runs in a worker of its own, judge it as it lands and hand
    it to `on_result` (which stores it): a run whose worker dies, hangs or fails is its own
    error row, and the runs after it go on."""
    request, workload, data = prepared.request, prepared.workload, prepared.data

    def one(device: Device, precision: str, progress: Callable[[int], None] | None) -> Result:
        if not device.available:  # its row says why; nothing of the model runs
            return verify_one(workload, device, precision, data, request.settings)
        return _verify_isolated(
            request, _row(workload, device, precision, data, request.settings), progress
        )

    return _verify_each(prepared.runs, one, request.settings, on_result, on_epoch)


@dataclass(frozen=True)
class _OneRun:
    """What a worker needs to train one device and precision (pickled across)."""

    ref: WorkloadRef
    device: str
    precision: str
    settings: Settings


def _train_in_worker(job: _OneRun, tell: Callable[[Any], None]) -> Result:
    """In the worker: load and check the model (check finds how it is trained), then train."""
    workload = load_workload(job.ref)
    workload.check()
    device = find_device(job.device)
    return verify_one(workload, device, job.precision, load_digits(), job.settings, tell)


def _verify_isolated(
    request: VerifyRequest, row: Result, progress: Callable[[int], None] | None
) -> Result:
    """`row`'s device and precision trained in a worker; its death, its silence past the
    timeout or its error is the row's status and message, and what it left running is
    recorded with it (stopped)."""
    job = _OneRun(request.workload, row.spec.device, row.spec.precision, request.settings)
    try:
        called = call_isolated(_train_in_worker, job, request.timeout, progress)
    except AccelbenchError as exc:  # said in one line; the other runs go on
        return replace(row, error=str(exc))
    result = called.value if called.status == "ok" else None
    if not isinstance(result, Result):
        result = replace(row, status=called.status, error=called.error or "no result came back")
    if called.left_running:
        result = replace(
            result, metrics={**result.metrics, LEFT_RUNNING: list(called.left_running)}
        )
    return result


def verify_devices(text: str) -> list[Device]:
    """'all' is every available device; named ones are kept even when not available here,
    so that they become failed rows. An unknown name is bad input."""
    from ..devices import resolve_devices

    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return resolve_devices("all")
    devices: list[Device] = []
    for name in names:
        device = find_device(name)
        if device not in devices:
            devices.append(device)
    if not devices:
        raise UsageError(f"no device named in {text!r}; try cpu, cuda or all")
    return devices


def verify_loaded(
    workload: Workload,
    devices: Sequence[Device],
    precisions: Sequence[str],
    settings: Settings,
    data: Digits | None = None,
    on_result: Callable[[Result], Result] | None = None,
    on_epoch: Callable[[Device, str, int], None] | None = None,
) -> list[Result]:
    """Train the loaded `workload` on every device and precision in this process, the CPU
    fp32 baseline first, judged as `verify_prepared` judges them. The model runs here: for
    tests and workers; `verify` and the command train in workers.

    `data` comes from `digits_for`, which checks the input; it is called here when not given.
    """
    loaded = data or digits_for(workload, settings)

    def one(device: Device, precision: str, progress: Callable[[int], None] | None) -> Result:
        return verify_one(workload, device, precision, loaded, settings, progress)

    return _verify_each(runs_to_verify(devices, precisions), one, settings, on_result, on_epoch)


def _verify_each(
    runs: Sequence[tuple[Device, str]],
    one: Callable[[Device, str, Callable[[int], None] | None], Result],
    settings: Settings,
    on_result: Callable[[Result], Result] | None,
    on_epoch: Callable[[Device, str, int], None] | None,
) -> list[Result]:
    """Each run by `one`, the first (the baseline) first; each judged as it lands and handed
    to `on_result` before the next starts. All share one id in `sweep`."""
    sweep = uuid.uuid4().hex[:12]
    results: list[Result] = []
    baseline: Result | None = None
    for device, precision in runs:
        result = replace(
            one(device, precision, _epoch_callback(on_epoch, device, precision)), sweep=sweep
        )
        baseline = baseline or result
        result = judge_against_baseline(result, baseline, settings)
        results.append(on_result(result) if on_result else result)
    return results


def _epoch_callback(
    on_epoch: Callable[[Device, str, int], None] | None, device: Device, precision: str
) -> Callable[[int], None] | None:
    if on_epoch is None:
        return None
    return lambda epoch: on_epoch(device, precision, epoch)
