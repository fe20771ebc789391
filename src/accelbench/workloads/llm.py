"""Decoder language models from `transformers` configs with random weights (nothing is
downloaded): GPT-2, and Llama-3.2-1B's and Qwen2.5-0.5B's shapes, for mode "generate" (and
next-token training or inference on a fixed sequence in the other modes).

A `LanguageModel` says what generation needs of a model beyond a Workload: its prompt's tokens,
its longest sequence, and the shape of its KV cache. Parameter counts are computed from the
sizes, so `accelbench workloads` lists them without building (or importing) anything.
"""

from __future__ import annotations

import functools
import inspect
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import require
from . import register
from .base import Batch, Workload
from .inputs import Inputs

__all__ = ["KVLayout", "LanguageModel", "forward_with_cache", "is_causal_lm", "static_cache"]


@dataclass(frozen=True)
class KVLayout:
    """What one position of the KV cache holds: a key and a value per layer and KV head."""

    layers: int
    kv_heads: int
    head_dim: int

    @classmethod
    def of(cls, config: Any) -> KVLayout:
        """From a transformers config (its attribute map gives GPT-2's n_layer these names)."""
        heads = int(config.num_attention_heads)
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        head_dim = getattr(config, "head_dim", None) or int(config.hidden_size) // heads
        return cls(int(config.num_hidden_layers), int(kv_heads), int(head_dim))


def is_causal_lm(model: object) -> bool:
    """Whether the generate mode can drive `model`: a transformers PreTrainedModel that says
    it can generate (a *ForCausalLM or *LMHeadModel: its forward takes input_ids,
    past_key_values and use_cache, and returns logits). A bare nn.Module is not, whatever it
    returns: generation needs the model's own KV cache."""
    can_generate = getattr(model, "can_generate", None)
    return (
        isinstance(model, nn.Module)
        and callable(can_generate)
        and hasattr(model, "config")
        and bool(can_generate())
    )


def forward_with_cache(
    model: nn.Module,
    input_ids: torch.Tensor,
    cache: Any,
    position: torch.Tensor | None = None,
    call: Callable[..., Any] | None = None,
) -> tuple[torch.Tensor, Any]:
    """One forward of a causal LM through its KV cache (None: a new one, for the prompt): the
    last position's logits and the cache. Only the last position's logits are computed where
    the model can (as `generate()` does), so a prefill does not pay the head over the prompt.

    `position` holds the cache positions of `input_ids`, on the device; it is passed where the
    forward takes it (transformers before 5.2x), so a static cache is never asked its length
    (a read of the device). `call` replaces the model's forward (a compiled one)."""
    names = _forward_names(type(model).forward)
    kwargs: dict[str, Any] = {"input_ids": input_ids, "use_cache": True}
    if cache is not None:
        kwargs[names.cache] = cache
    if names.keep:
        kwargs[names.keep] = 1
    if names.position and position is not None:
        kwargs["cache_position"] = position
    out = (call or model)(**kwargs)
    found = out.get("cache")  # transformers 5.2x's name; before it, past_key_values
    return out.logits[:, -1, :], out.get("past_key_values") if found is None else found


@dataclass(frozen=True)
class _ForwardNames:
    cache: str  # what this transformers version calls the cache argument
    keep: str  # the argument that keeps only the last logits ("" where there is none)
    position: bool  # whether the forward takes cache_position


@functools.cache
def _forward_names(forward: Callable[..., Any]) -> _ForwardNames:
    names = inspect.signature(forward).parameters
    cache = "cache" if "cache" in names else "past_key_values"
    keep = next((n for n in ("logits_to_keep", "num_logits_to_keep") if n in names), "")
    return _ForwardNames(cache, keep, "cache_position" in names)


def static_cache(model: nn.Module, batch_size: int, max_length: int) -> Any:
    """A transformers StaticCache for `model`, `max_length` positions long: allocated on first
    use at the layers' dtype and device, then written in place (so a compiled decode step sees
    fixed shapes and addresses). Arguments older versions needed are given where they exist."""
    transformers = require("transformers", "models", "a static KV cache")
    wanted = inspect.signature(transformers.StaticCache.__init__).parameters
    weight = next(iter(model.parameters()))
    offered = {
        "config": model.config,
        "max_cache_len": max_length,
        "max_batch_size": batch_size,
        "device": weight.device,
        "dtype": weight.dtype,
    }
    return transformers.StaticCache(**{k: v for k, v in offered.items() if k in wanted})


class LanguageModel(Workload):
    """A causal language model. Train and infer run one fixed sequence of `input_shape` tokens
    (next-token cross-entropy); generate decodes after a prompt (see backends/generate)."""

    language_model = True
    # The attention implementation transformers picks for the model when none is asked for
    # (its own for every built-in here); the attention lever offers the others.
    attention = "sdpa"
    input_shape: tuple[int, ...] = (128,)  # train and infer: tokens per sequence
    batch_size = 1
    prompt_length = 128  # generate's defaults, when --prompt-lengths / --new-tokens are not given
    new_tokens = 32

    @abstractmethod
    def config(self) -> Any:
        """The transformers config the model is built from."""

    def build_model(self) -> nn.Module:
        transformers = require("transformers", "models", f"workload {self.name!r}")
        model: nn.Module = transformers.AutoModelForCausalLM.from_config(self.config())
        return model

    @property
    def vocab_size(self) -> int:
        return int(self.config().vocab_size)

    @property
    def max_positions(self) -> int | None:
        """The longest sequence (prompt and new tokens) the model's positions cover; None
        where its config does not say."""
        found = getattr(self.config(), "max_position_embeddings", None)
        return None if found is None else int(found)

    def kv_layout(self) -> KVLayout:
        return KVLayout.of(self.config())

    def prompt(self, generator: torch.Generator, batch_size: int, length: int) -> torch.Tensor:
        """Random token ids, (batch, length), on the CPU: the same prompt on every device."""
        return torch.randint(0, self.vocab_size, (batch_size, length), generator=generator)

    def make_batch(self, generator: torch.Generator, batch_size: int) -> Batch:
        ids = self.prompt(generator, batch_size, self.input_shape[0] + 1)
        return ids[:, :-1], ids[:, 1:]  # each position predicts the next token

    def forward(self, model: nn.Module, inputs: Inputs) -> torch.Tensor:
        logits: torch.Tensor = model(input_ids=inputs, use_cache=False).logits
        return logits

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(outputs.flatten(0, 1), targets.flatten())

    def make_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.AdamW(model.parameters(), lr=5e-5)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "language_model": True}


class _SizedModel(LanguageModel):
    """A built-in decoder whose sizes are class attributes (so its parameters can be counted
    without building it)."""

    hidden = 0
    layers = 0
    heads = 0
    kv_heads = 0
    intermediate = 0
    vocabulary = 0
    positions = 0
    summary = ""  # what the model is, for the description

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.hidden:
            n = cls.parameters()
            count = f"{n / 1e9:.2f} B parameters" if n >= 1e9 else f"{n / 1e6:.1f} M parameters"
            cls.description = f"{cls.summary}, {count}, random init (nothing downloaded)"

    @classmethod
    @abstractmethod
    def parameters(cls) -> int:
        """The model's parameter count, tied embeddings once."""


class _Gpt2Shape(_SizedModel):
    intermediate_factor = 4  # GPT2Config's n_inner None: 4 x hidden

    @classmethod
    def parameters(cls) -> int:
        h, v, p = cls.hidden, cls.vocabulary, cls.positions
        inner = cls.intermediate_factor * h
        per_layer = (h * 3 * h + 3 * h) + (h * h + h) + (h * inner + inner) + (inner * h + h)
        per_layer += 4 * h  # two LayerNorms, weight and bias
        return v * h + p * h + cls.layers * per_layer + 2 * h  # tied head; the final LayerNorm

    def config(self) -> Any:
        transformers = require("transformers", "models", f"workload {self.name!r}")
        return transformers.GPT2Config(
            n_embd=self.hidden,
            n_layer=self.layers,
            n_head=self.heads,
            vocab_size=self.vocabulary,
            n_positions=self.positions,
            # GPT-2's end token (50256) would lie outside a smaller vocabulary; no end token
            # stops a generation here anyway
            bos_token_id=min(50256, self.vocabulary - 1),
            eos_token_id=min(50256, self.vocabulary - 1),
        )


@register
class Gpt2(_Gpt2Shape):
    name = "gpt2"
    hidden, layers, heads, kv_heads = 768, 12, 12, 12
    vocabulary, positions = 50257, 1024
    summary = "transformers GPT2LMHeadModel, GPT2Config defaults (GPT-2 small)"


@register
class Gpt2Tiny(_Gpt2Shape):
    name = "gpt2-tiny"
    hidden, layers, heads, kv_heads = 64, 2, 2, 2
    vocabulary, positions = 1000, 256
    input_shape = (32,)
    prompt_length, new_tokens = 16, 8
    summary = "a 2-layer GPT-2 for smoke tests and the test suite (hidden 64, vocabulary 1,000)"


class _GroupedQueryShape(_SizedModel):
    """Llama and Qwen2: grouped-query attention, a gated MLP, RMSNorm, tied embeddings."""

    qkv_bias = False  # Qwen2 has biases on q, k and v
    rope_theta = 10000.0

    @classmethod
    def parameters(cls) -> int:
        h, kv = cls.hidden, cls.kv_heads * (cls.hidden // cls.heads)
        attention = 2 * h * h + 2 * h * kv + (h + 2 * kv if cls.qkv_bias else 0)
        per_layer = attention + 3 * h * cls.intermediate + 2 * h  # two RMSNorms
        return cls.vocabulary * h + cls.layers * per_layer + h  # tied head; the final norm

    def sizes(self) -> dict[str, Any]:
        return {
            "hidden_size": self.hidden,
            "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads,
            "intermediate_size": self.intermediate,
            "vocab_size": self.vocabulary,
            "max_position_embeddings": self.positions,
            "tie_word_embeddings": True,
            "rope_theta": self.rope_theta,
        }


@register
class Llama1B(_GroupedQueryShape):
    name = "llama-1b"
    hidden, layers, heads, kv_heads = 2048, 16, 32, 8
    intermediate, vocabulary, positions = 8192, 128256, 131072
    rope_theta = 500000.0
    summary = "transformers LlamaForCausalLM with Llama-3.2-1B's sizes (GQA 32/8 heads, tied)"

    def config(self) -> Any:
        transformers = require("transformers", "models", f"workload {self.name!r}")
        return transformers.LlamaConfig(**self.sizes())


@register
class Qwen05B(_GroupedQueryShape):
    name = "qwen-0.5b"
    hidden, layers, heads, kv_heads = 896, 24, 14, 2
    intermediate, vocabulary, positions = 4864, 151936, 32768
    qkv_bias = True
    rope_theta = 1000000.0
    summary = "transformers Qwen2ForCausalLM with Qwen2.5-0.5B's sizes (GQA 14/2 heads, tied)"

    def config(self) -> Any:
        transformers = require("transformers", "models", f"workload {self.name!r}")
        return transformers.Qwen2Config(**self.sizes())
