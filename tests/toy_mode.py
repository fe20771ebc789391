"""A mode of a test's own, loaded through ACCELBENCH_LEVERS: nothing else in accelbench is
edited for it, and `run`, `compare`, the store and export/import must take it as they take the
built-in modes."""

from accelbench.modes import Mode, register_mode


@register_mode
class Toy(Mode):
    name = "toy"
    help = "a toy mode: the forward pass twice"
    probes = False  # no verdict's probe: the test stays quick
    rate_unit = "toy samples/s"

    def build_step(self, prep):
        import torch

        model, workload, inputs = prep.model, prep.workload, prep.batch[0]
        prep.info["toy_mode"] = {"passes": 2}  # lands in the result's metrics

        def toy_step():
            with torch.inference_mode(), prep.autocast():
                workload.forward(model, inputs)
                workload.forward(model, inputs)

        return toy_step
