"""Seed 001's models: torchvision's ResNet50, VGG16 and MobileNetV3, and BERT-base.

All start from random weights (nothing is downloaded). torchvision and transformers are imported
only when a model is built, with an install hint when missing.
"""

from __future__ import annotations

import torch
from torch import nn

from ..errors import require
from . import register
from .base import Batch, Workload, random_images
from .inputs import Inputs


class _TorchvisionClassifier(Workload):
    """An ImageNet-shaped torchvision classifier: 3x224x224 inputs, 1000 classes."""

    arch = ""
    input_shape = (3, 224, 224)
    num_classes = 1000

    def build_model(self) -> nn.Module:
        models = require("torchvision.models", "models", f"workload {self.name!r}", "torchvision")
        model: nn.Module = getattr(models, self.arch)(weights=None, num_classes=self.num_classes)
        return model

    def make_batch(self, generator: torch.Generator, batch_size: int) -> Batch:
        return random_images(generator, batch_size, self.input_shape, self.num_classes)


@register
class ResNet50(_TorchvisionClassifier):
    name = "resnet50"
    arch = "resnet50"
    batch_size = 128  # seed 001
    description = (
        "torchvision ResNet50, random init, 224x224, 1000 classes, SGD (seed 001: batch 128)"
    )


@register
class VGG16(_TorchvisionClassifier):
    name = "vgg16"
    arch = "vgg16"
    batch_size = 64  # seed 001
    description = "torchvision VGG16, random init, 224x224, 1000 classes, SGD (seed 001)"


@register
class MobileNetV3Large(_TorchvisionClassifier):
    name = "mobilenet_v3_large"
    arch = "mobilenet_v3_large"
    batch_size = 128  # seed 001 names none; ResNet50's
    description = "torchvision MobileNetV3-Large, random init, 224x224, 1000 classes, SGD"


@register
class BertBase(Workload):
    name = "bert-base"
    batch_size = 64  # seed 001
    input_shape = (128,)  # token ids: sequence length 128
    num_classes = 2
    description = (
        "transformers BertForSequenceClassification, default BertConfig (bert-base), random init, "
        "sequence length 128, 2 labels, AdamW (seed 001: batch 64)"
    )

    def build_model(self) -> nn.Module:
        transformers = require("transformers", "models", f"workload {self.name!r}")
        config = transformers.BertConfig(num_labels=self.num_classes)
        model: nn.Module = transformers.BertForSequenceClassification(config)
        return model

    @property
    def vocab_size(self) -> int:
        return 30522  # BertConfig's default, bert-base-uncased's vocabulary

    def make_batch(self, generator: torch.Generator, batch_size: int) -> Batch:
        ids = torch.randint(
            0, self.vocab_size, (batch_size, *self.input_shape), generator=generator
        )
        labels = torch.randint(0, self.num_classes, (batch_size,), generator=generator)
        return ids, labels

    def forward(self, model: nn.Module, inputs: Inputs) -> torch.Tensor:
        logits: torch.Tensor = model(input_ids=inputs).logits  # HF returns an output object
        return logits

    def make_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.AdamW(model.parameters(), lr=5e-5)
