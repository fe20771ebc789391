"""A lever of a test's own, loaded through ACCELBENCH_LEVERS: nothing else in accelbench is
edited for it, and it must show up everywhere levers do."""

from accelbench.levers import Lever, Variant, register

_LEVELS = {"off": "", "half": "half", "full": "full"}


@register
class Toy(Lever):
    name = "toy"
    option = "--toy-levels"
    help = "a toy lever: off, half, full (default: off)"
    dimension = "toy"
    default = ""
    words = tuple(_LEVELS)
    late = True  # its variants come after the stacks

    def from_word(self, word):
        return _LEVELS[word]

    def word(self, value):
        return value or "off"

    def label(self, value):
        return f"toy:{value}"

    def apply_model(self, prep, value):
        prep.info["toy"] = {"level": value}  # lands in the result's metrics

    def code(self, spec, device):
        return [f"# toy at {self.value(spec)}"]

    def variants(self, base, device, workload):
        return [Variant("toy half", self.assign(base, "half"), self.name, late=True)]
