"""FLOP counts checked against figures worked out by hand."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from accelbench.analysis.flops import count_flops, flops_per_sample


def call(model: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    return model(inputs)


def total(outputs: torch.Tensor) -> torch.Tensor:
    return outputs.sum()


def linear() -> nn.Linear:
    torch.manual_seed(0)
    return nn.Linear(in_features=64, out_features=32)


# One product of (8 x 64) by (64 x 32): 8*32 outputs, each 64 multiply-adds of 2 FLOPs.
LINEAR_FORWARD = 2 * 8 * 64 * 32  # 32768


def test_linear_forward_is_one_matrix_product() -> None:
    # The bias rides on addmm, which the counter charges for the product only.
    flops = count_flops(linear(), torch.randn(8, 64), call, None)
    assert flops == LINEAR_FORWARD


def test_linear_training_adds_only_the_weight_gradient_when_inputs_need_none() -> None:
    # Backward computes grad_weight = grad_out^T (32 x 8) @ x (8 x 64): one more product of the
    # same size. grad_input is skipped because the inputs do not require a gradient, and the bias
    # gradient (a sum over the batch) and the loss (a sum) are not matrix math, so count 0.
    # 32768 + 32768 = 65536.
    flops = count_flops(linear(), torch.randn(8, 64), call, total)
    assert flops == 2 * LINEAR_FORWARD


def test_linear_training_is_three_products_when_inputs_need_a_gradient() -> None:
    # As above plus grad_input = grad_out (8 x 32) @ W (32 x 64), the third product: this is the
    # familiar "backward costs twice the forward" of a layer inside a network. 3 * 32768 = 98304.
    inputs = torch.randn(8, 64, requires_grad=True)
    flops = count_flops(linear(), inputs, call, total)
    assert flops == 3 * LINEAR_FORWARD
    assert inputs.grad is None  # counting leaves no gradient on the inputs either


def test_conv2d_forward_and_training() -> None:
    torch.manual_seed(0)
    conv = nn.Conv2d(in_channels=3, out_channels=16, kernel_size=3, padding=1)
    inputs = torch.randn(2, 3, 8, 8)
    # Each of the 2*16*8*8 outputs (padding 1 keeps 8x8) sums 3*3*3 products: 2 FLOPs each.
    # 2 * 2048 * 27 = 110592.
    forward = 2 * (2 * 16 * 8 * 8) * (3 * 3 * 3)
    assert count_flops(conv, inputs, call, None) == forward
    # Backward of the first layer computes only the weight gradient, the same size of product.
    assert count_flops(conv, inputs, call, total) == 2 * forward


def test_attention_counts_the_same_on_the_cpu_as_on_cuda() -> None:
    # PyTorch's counter knows CUDA's fused attention ops but not the CPU's; accelbench supplies
    # the same formula. Batch 2, 4 heads, 16 positions, head size 8, so b*h = 8 products of each:
    # forward: scores Q K^T (16x8 @ 8x16) and weighted sum P V (16x16 @ 16x8), each
    # 2*8*16*16*8 = 32768 FLOPs: 65536. Backward (flash style): recompute the scores, then
    # grad_scores, grad_V, grad_Q and grad_K, five products: 163840.
    class Attention(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.functional.scaled_dot_product_attention(x, x, x)

    inputs = torch.randn(2, 4, 16, 8)
    assert count_flops(Attention(), inputs, call, None) == 65536
    needs_grad = inputs.clone().requires_grad_()
    assert count_flops(Attention(), needs_grad, call, total) == 65536 + 163840


class Small(nn.Module):
    """A model with every kind of state a step can disturb: weights, running stats, dropout."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.norm = nn.BatchNorm1d(16)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.norm(self.fc(x))))


@pytest.mark.parametrize("training", [True, False], ids=["train", "inference"])
def test_counting_leaves_the_model_as_it_was(training: bool) -> None:
    torch.manual_seed(0)
    model = Small().eval()
    model.norm.train()  # a mixed state, which model.train()/eval() alone could not restore
    before = {k: v.clone() for k, v in model.state_dict().items()}
    loss = total if training else None
    count_flops(model, torch.randn(8, 16), call, loss)
    after = model.state_dict()
    assert before.keys() == after.keys()
    for name, value in before.items():
        assert torch.equal(value, after[name]), name  # weights and BatchNorm statistics alike
    assert all(p.grad is None for p in model.parameters())
    assert not model.training and not model.fc.training and model.norm.training


def test_gradients_already_there_are_kept() -> None:
    model = linear()
    model(torch.randn(8, 64)).sum().backward()
    held = model.weight.grad.clone()  # type: ignore[union-attr]
    count_flops(model, torch.randn(8, 64), call, total)
    assert torch.equal(model.weight.grad, held)  # type: ignore[arg-type]


def test_forward_adapter_is_used() -> None:
    # Callers adapt models whose output is not a tensor, e.g. HuggingFace's `.logits`.
    class Wrapped(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = linear()

        def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
            return {"logits": self.inner(x)}

    def logits(model: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
        return model(inputs)["logits"]

    assert count_flops(Wrapped(), torch.randn(8, 64), logits, total) == 2 * LINEAR_FORWARD


def test_flops_per_sample() -> None:
    assert flops_per_sample(LINEAR_FORWARD, 8) == 2 * 64 * 32
    with pytest.raises(ValueError, match="batch_size"):
        flops_per_sample(LINEAR_FORWARD, 0)


def test_depthwise_convolution_backward_counts_each_gradient_once():
    # PyTorch's own backward formula ignores groups; ours must not. Depthwise 3x3 over
    # 64 channels, 32x32, batch 2: forward = 2 * 2 * 64 * (1 * 3 * 3) * 32 * 32 = 2,359,296,
    # and training adds a weight gradient and an input gradient of the same cost each.
    conv = torch.nn.Conv2d(64, 64, 3, padding=1, groups=64)
    x = torch.randn(2, 64, 32, 32, requires_grad=True)
    assert count_flops(conv, x, lambda m, i: m(i), None) == 2_359_296
    assert count_flops(conv, x, lambda m, i: m(i), lambda out: out.sum()) == 3 * 2_359_296
