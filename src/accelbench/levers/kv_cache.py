"""The KV cache of mode generate: dynamic (transformers' default, grown by concatenation at
every token) or static (allocated once at the prompt plus new tokens, written in place), which
gives the decode step one shape and fixed addresses: what torch.compile's CUDA graphs need."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.facts import generation_lengths
from ..core.modes import mode_of
from ..core.result import RunSpec, Value
from .base import Lever, Prepared, Variant, find_lever, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload


@register
class KVCache(Lever):
    name = "kv_cache"
    title = "a static KV cache"
    option = "--kv-cache"
    help = (
        "--modes generate: the KV cache, dynamic (grown at every token) or static "
        "(allocated once; what --compile needs there) (default: dynamic)"
    )
    dimension = "kv-cache"
    default = ""  # dynamic
    words = ("dynamic", "static")
    stage = 40  # after the precision casts the weights (the cache takes the layers' dtype)
    searched = True
    setup_cost = True  # compiles: tried once, last (workflows/search)
    generates = True
    relieves = ("host",)  # with compile: the decode step's launches in one graph

    def from_word(self, word: str) -> Value:
        return "" if word == "dynamic" else word

    def word(self, value: Value) -> str:
        return str(value) or "dynamic"

    def label(self, value: Value) -> str:
        return "static-cache" if value else ""

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if not mode_of(spec).decodes:
            return "a KV cache is kept only in mode generate"
        return None

    def apply_model(self, prep: Prepared, value: Value) -> None:
        from ..workloads.llm import static_cache

        # the last decode step writes position prompt + new - 2; one spare costs nothing
        length = _sequence_length(prep.spec)
        prep.kv_cache = static_cache(prep.model, prep.spec.batch_size, length)

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        try:
            length: int | str = _sequence_length(spec)
        except ValueError:  # a configuration without its lengths yet: the user's own
            length = "PROMPT_LENGTH + NEW_TOKENS"
        return [
            f"cache = transformers.StaticCache(config=model.config, max_cache_len={length})",
            "# pass cache=cache (past_key_values= before transformers 5.2x, with "
            "cache_position=) to every forward; cache.reset() before each generation",
        ]

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        """A static cache pays through torch.compile (alone it only stops the cache's copies),
        so the search measures the two together: with CUDA graphs where the device has them,
        as transformers' own compiled generate() does."""
        if not mode_of(base).decodes:
            return []
        mode = "reduce-overhead" if device.can_capture_graphs else "default"
        spec = find_lever("compile").assign(self.assign(base, "static"), mode)
        name = "static-cache + compile" + ("" if mode == "default" else f":{mode}")
        return [Variant(name, spec, self.name)]

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        return "" if mode_of(base).decodes else "a KV cache is kept only in mode generate"


def _sequence_length(spec: RunSpec) -> int:
    """The positions a generation's cache holds: the prompt and the new tokens."""
    prompt, new = generation_lengths(spec)
    return prompt + new
