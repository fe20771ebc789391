"""A mode of a test's own, loaded through ACCELBENCH_LEVERS: nothing else in accelbench is
edited for it, and `run`, `compare`, the store and export/import must take it as they take the
built-in modes. It has an option of its own, `--toy-passes` (forward passes per step), which
must reach the CLI, the sweep, the worker, the label, the store, --json, CSV and the report,
and a measurement of its own (the closed loop, noting that it ran)."""

from accelbench.core.mode_options import Count
from accelbench.modes import Mode, register_mode

PASSES = Count(
    "passes",
    option="--toy-passes",
    single="--toy-pass-count",
    help="forward passes per step (default: 2)",
    default=2,
)


@register_mode
class Toy(Mode):
    name = "toy"
    help = "a toy mode: the forward pass, --toy-passes times"
    probes = False  # no verdict's probe: the test stays quick
    rate_unit = "toy samples/s"
    options = (PASSES,)

    def build_step(self, prep):
        import torch

        model, workload, inputs = prep.model, prep.workload, prep.batch[0]
        passes = PASSES.of(prep.spec)  # the option's value, read in the worker
        prep.info["toy_mode"] = {"passes": passes}  # lands in the result's metrics

        def toy_step():
            with torch.inference_mode(), prep.autocast():
                for _ in range(passes):
                    workload.forward(model, inputs)

        return toy_step

    def measure(self, prep, closed_loop):
        measurement = closed_loop()
        prep.info["toy_mode"]["measured_by"] = "toy"  # its own measurement ran
        return measurement
