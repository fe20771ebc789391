"""`accelbench verify`: train on real data on each device and precision, judged against CPU
fp32."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..analysis.facts import Verification
from ..core.vocab import PRECISIONS
from .options import (
    Commands,
    ListOf,
    OneOf,
    add_model_options,
    add_output_options,
    count,
    fraction,
    from_args,
    points,
    positive,
    seconds,
    workload_ref,
)
from .output import db_path, emit_json, result_json, width

if TYPE_CHECKING:
    from pathlib import Path

    from ..core.result import Result
    from ..devices import Device

DEFAULT_TIMEOUT_S = 1800.0  # workflows.verify's, which imports torch (a test keeps them equal)
TRAINING_PRECISIONS = PRECISIONS[:4]  # int8 is ONNX Runtime's, for inference
DIVERGED = {"diverges", "inconclusive"}  # verdicts that make verify exit 1


def add_parser(commands: Commands) -> None:
    verify = commands.add_parser(
        "verify",
        help="train on a real data set on each device and precision; flag any that diverge "
        "from CPU fp32",
        description="Train the workload from the same initial weights, on the same batches of "
        "scikit-learn's digits (1,797 8x8 images, resized and replicated to the model's input), "
        "on each device and precision, and compare each run's loss per epoch and held-out "
        "accuracy with the CPU at fp32 (always run first, listed or not); accuracy is compared "
        "image by image, with a paired 95% interval of the difference. Exit code 0 when every "
        "run is within tolerance or undetermined (the 360 held-out images cannot tell a drop "
        "of the tolerance's size from chance); 1 when one diverges (significantly less "
        "accurate by more than the tolerance, final loss beyond tolerance, or a loss that is "
        "not finite), fails, or cannot be judged because the CPU fp32 baseline learned too "
        "little (under 90% held-out accuracy); 2 for bad input.",
    )
    verify.add_argument("workload", nargs="?", help="a workload name (or use --model)")
    add_model_options(verify.add_argument_group("your own model"))
    verify.add_argument(
        "--devices",
        default="all",
        metavar="LIST",
        help="cpu, cuda, cuda:N, mps, xpu, xpu:N, or all available (default); a device not "
        "available here becomes a failed row",
    )
    verify.add_argument(
        "--precisions",
        type=ListOf(OneOf(TRAINING_PRECISIONS)),
        default=("fp32",),
        metavar="LIST",
        help="fp32 (TF32 off), tf32, fp16 (autocast + GradScaler), bf16 (autocast) (default: fp32)",
    )
    _add_training(verify)
    verify.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help="each device and precision trains in a worker process of its own: stop it S "
        f"seconds after it is ready, and make it that run's error row (default: "
        f"{DEFAULT_TIMEOUT_S:g}); loading and checking the model has the same limit",
    )
    add_output_options(verify, progress=True)
    verify.set_defaults(handler=handle)


def _add_training(verify: argparse.ArgumentParser) -> None:
    verify.add_argument(
        "--epochs",
        type=count(1),
        default=5,
        metavar="N",
        help="passes over the training images (default: 5)",
    )
    verify.add_argument("--batch-size", type=count(1), metavar="N", help="default: the workload's")
    verify.add_argument(
        "--lr",
        type=positive,
        metavar="X",
        help="learning rate for the workload's optimizer (default: the workload's own; "
        "seed-cnn's 0.001 learns too slowly for a few epochs: try 0.01)",
    )
    verify.add_argument(
        "--accuracy-tolerance",
        dest="tolerance",
        type=points,
        default=2.0,
        metavar="POINTS",
        help="a run diverges when its held-out accuracy is significantly lower than CPU "
        "fp32's (paired 95%% interval below zero) by more than this many percentage points; it "
        "is within tolerance when the interval rules out such a drop, undetermined otherwise; "
        "a more accurate run never diverges (default: 2)",
    )
    verify.add_argument(
        "--loss-tolerance",
        type=fraction,
        default=0.1,
        metavar="PCT",
        help="the final epoch's loss may differ from CPU fp32's by this fraction of CPU fp32's "
        "first-epoch loss (default: 10%%)",
    )


def handle(args: argparse.Namespace) -> int:
    from ..engine.track import progress_bar
    from ..store.db import Store
    from ..workflows.verify import FAILED, Settings, VerifyRequest, prepare, verify_prepared

    request = VerifyRequest(
        workload=workload_ref(args),
        devices=args.devices,
        precisions=tuple(args.precisions),
        settings=from_args(Settings, args),
        timeout=args.timeout,
    )
    # every input checked (the model loaded and checked in a worker) before the store opens
    prepared = prepare(request)
    total = len(prepared.runs) * args.epochs
    with Store(db_path(args)) as store, progress_bar(disable=args.quiet) as bar:
        task = bar.add_task(f"verify {prepared.workload.name}", total=total)
        results = verify_prepared(
            prepared,
            on_result=store.save,
            on_epoch=lambda device, precision, epoch: bar.advance(task),
        )
    _print(args, results, prepared.devices, store.path)
    failed = [r for r in results if r.status in FAILED or _verdict(r) in DIVERGED]
    return 1 if failed else 0


def _verdict(result: Result) -> str:
    verification = result.facts.get(Verification)
    return verification.verdict if verification else ""


def _print(
    args: argparse.Namespace, results: list[Result], devices: list[Device], db: Path | str
) -> None:
    from ..render.console import verify_table

    sweep = results[0].sweep
    if args.json:
        emit_json(
            {
                "db": str(db),
                "sweep": sweep,
                "results": [result_json(r) for r in results],
            }
        )
        return
    notes = (
        []
        if any(d.is_host for d in devices)
        else ["cpu was not listed: it ran anyway, at fp32, as the baseline"]
    )
    print(verify_table(results, notes, width=width()), end="")
    ids = ", ".join(f"#{r.id}" for r in results)
    print(f"stored as result(s) {ids} in {db} (verify run {sweep})")
