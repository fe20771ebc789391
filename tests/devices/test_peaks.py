"""Peak figures: the published table and calibration on the CPU."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace

import pytest
import torch

from accelbench.core import peaks as core_peaks
from accelbench.devices import DtypeSupport, resolve_devices
from accelbench.devices.peaks import _TABLE, PeakFigures, calibrate, known_peaks
from accelbench.errors import UsageError

PRECISIONS = {"fp32", "tf32", "fp16", "bf16"}


def test_h200_has_its_dense_datasheet_figures() -> None:
    peaks = known_peaks("NVIDIA H200")
    assert peaks is not None
    # 1,979 TFLOPS "with sparsity" on the datasheet: 989.5 dense, not 1,979.
    assert peaks.flops["bf16"] == pytest.approx(989e12, rel=1e-3)
    assert peaks.flops["fp16"] == peaks.flops["bf16"]
    assert peaks.flops["tf32"] == pytest.approx(494.5e12, rel=1e-3)
    assert peaks.flops["fp32"] == pytest.approx(67e12)
    assert peaks.bandwidth == pytest.approx(4.8e12)
    assert "H200" in peaks.source


def test_rtx_4090_uses_the_fp32_accumulate_tensor_rate() -> None:
    peaks = known_peaks("NVIDIA GeForce RTX 4090")
    assert peaks is not None
    # PyTorch's fp16 matmuls accumulate in FP32: 165.2 TFLOPS, not the 330.3 of FP16 accumulate.
    assert peaks.flops["bf16"] == pytest.approx(165.2e12)
    assert peaks.flops["tf32"] == peaks.flops["fp32"] == pytest.approx(82.6e12)
    assert peaks.bandwidth == pytest.approx(1008e9)


@pytest.mark.parametrize(
    "name",
    [
        "nvidia geforce rtx 4090",
        "NVIDIA GEFORCE RTX 4090",
        "  NVIDIA  GeForce RTX 4090 ",
        "GeForce RTX 4090",
        "RTX 4090",
    ],
)
def test_lookup_ignores_case_spacing_and_vendor_words(name: str) -> None:
    assert known_peaks(name) is known_peaks("NVIDIA GeForce RTX 4090")


def test_a100_name_variants_differ_only_in_bandwidth() -> None:
    sxm = known_peaks("NVIDIA A100-SXM4-80GB")
    pcie = known_peaks("NVIDIA A100 80GB PCIe")
    small = known_peaks("nvidia a100 sxm4 40gb")  # hyphens or spaces alike
    assert sxm is not None and pcie is not None and small is not None
    assert sxm.flops == pcie.flops == small.flops
    assert (sxm.bandwidth, pcie.bandwidth, small.bandwidth) == (2039e9, 1935e9, 1555e9)


@pytest.mark.parametrize(
    "name",
    ["NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 4090 Laptop GPU", "NVIDIA B200", "", "cpu"],
)
def test_unknown_or_different_models_are_none(name: str) -> None:
    assert known_peaks(name) is None


def test_apple_chips_carry_only_what_apple_published() -> None:
    m1 = known_peaks("Apple M1")
    m2_max = known_peaks("Apple M2 Max")
    assert m1 is not None and m2_max is not None
    assert set(m1.flops) == {"fp32"}  # no tf32, fp16 or bf16 figure to quote
    assert m1.bandwidth is None
    assert dict(m2_max.flops) == {}  # Apple gave no FLOPS for M2 Max: none invented
    assert m2_max.bandwidth == pytest.approx(400e9)


@pytest.mark.parametrize("name", sorted(_TABLE))
def test_every_entry_is_well_formed(name: str) -> None:
    peaks = known_peaks(name)
    assert peaks is not None and peaks.source
    assert set(peaks.flops) <= PRECISIONS
    assert peaks.flops or peaks.bandwidth  # an entry with nothing in it would be noise
    for value in [*peaks.flops.values(), peaks.bandwidth or 1.0]:
        assert math.isfinite(value) and value > 0
    if "fp16" in peaks.flops:
        assert peaks.flops["fp16"] >= peaks.flops["fp32"]


def test_figures_cannot_be_edited_in_place() -> None:
    peaks = known_peaks("NVIDIA H200")
    assert peaks is not None
    with pytest.raises(TypeError):
        peaks.flops["bf16"] = 1.0  # type: ignore[index]


@pytest.fixture(scope="module")
def cpu_peaks() -> PeakFigures:
    return calibrate(resolve_devices("cpu")[0], size=128, repeats=3)


def test_calibrate_on_the_cpu_measures_fp32_and_bandwidth(cpu_peaks: PeakFigures) -> None:
    assert cpu_peaks.flops["fp32"] > 0
    assert cpu_peaks.bandwidth is not None and cpu_peaks.bandwidth > 0
    assert cpu_peaks.source.startswith("calibrated on this machine")
    assert "cpu" in cpu_peaks.source and "128x128" in cpu_peaks.source


def test_calibrate_skips_precisions_the_device_lacks(cpu_peaks: PeakFigures) -> None:
    # The CPU has no TF32; it reports fp16 and bf16, so those are measured.
    assert "tf32" not in cpu_peaks.flops
    assert set(cpu_peaks.flops) == {"fp32", "fp16", "bf16"}


def test_fp32_runs_with_tf32_forbidden_and_tf32_with_it_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A CPU dressed up as TF32-capable, so both float32 precisions are attempted.
    device = replace(
        resolve_devices("cpu")[0], dtypes=DtypeSupport(fp16=False, bf16=False, tf32=True)
    )
    seen: dict[torch.dtype, set[bool]] = {}
    real_mm = torch.mm

    def spy(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        seen.setdefault(a.dtype, set()).add(torch.backends.cuda.matmul.allow_tf32)
        return real_mm(a, b, out=out)

    monkeypatch.setattr(torch, "mm", spy)
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True  # the caller's choice, to be left as it was
    try:
        calibrate(device, precisions=("fp32",), size=32, repeats=1)
        assert seen == {torch.float32: {False}}
        calibrate(device, precisions=("tf32",), size=32, repeats=1)
        assert seen == {torch.float32: {False, True}}
        assert torch.backends.cuda.matmul.allow_tf32 is True
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def test_calibrate_measures_only_what_is_asked() -> None:
    peaks = calibrate(resolve_devices("cpu")[0], precisions=("bf16",), size=64, repeats=1)
    assert set(peaks.flops) == {"bf16"}


def test_calibrate_leaves_the_global_random_state_alone() -> None:
    state = torch.random.get_rng_state()
    calibrate(resolve_devices("cpu")[0], precisions=("fp32",), size=64, repeats=1)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_calibrate_rejects_unknown_precisions_and_bad_counts() -> None:
    cpu = resolve_devices("cpu")[0]
    with pytest.raises(UsageError, match="fp8"):
        calibrate(cpu, precisions=("fp8",))
    with pytest.raises(UsageError, match="repeats"):
        calibrate(cpu, repeats=0)


def test_peak_figures_are_a_torch_free_core_value_the_device_layer_re_exports() -> None:
    assert PeakFigures is core_peaks.PeakFigures
    code = (
        "import sys\n"
        "from accelbench.core.peaks import PeakFigures\n"
        "PeakFigures(flops={'fp32': 1.0}, bandwidth=None, source='test')\n"
        "assert 'torch' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_calibrate_leaves_the_convolution_tf32_switch_as_the_caller_set_it() -> None:
    device = replace(
        resolve_devices("cpu")[0], dtypes=DtypeSupport(fp16=False, bf16=False, tf32=True)
    )
    before = torch.backends.cudnn.allow_tf32
    try:
        for setting in (True, False):
            torch.backends.cudnn.allow_tf32 = setting
            calibrate(device, precisions=("fp32", "tf32"), size=32, repeats=1)
            assert torch.backends.cudnn.allow_tf32 is setting
    finally:
        torch.backends.cudnn.allow_tf32 = before


def test_calibrate_is_a_function_returning_what_the_command_renders(tmp_path) -> None:
    """The library calibrates as `accelbench calibrate` does, from a typed request, and the
    value it returns is the one the table and --json render."""
    import accelbench
    from accelbench.render.console import calibration_table
    from accelbench.store.db import Store

    request = accelbench.CalibrateRequest(
        devices="cpu", precisions=("fp32",), size=64, repeats=1
    )
    (found,) = accelbench.calibrate(request, db=tmp_path / "c.db")
    assert found.device == "cpu" and found.measured.flops["fp32"] > 0
    assert found.to_dict()["flops"] == {"fp32": found.measured.flops["fp32"]}
    with Store(tmp_path / "c.db") as store:
        assert store.calibrations()[found.model] == found.measured
    assert "cpu" in calibration_table([found]) and found.measured.source in calibration_table(
        [found], width=400
    )


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"precisions": ("int8",)}, "cannot calibrate precision 'int8'; valid: fp32, tf32"),
        ({"precisions": ()}, "cannot calibrate precision none; valid: fp32, tf32"),
        ({"size": 0}, "size must be a whole number from 1 to 1,000,000,000, not 0"),
        ({"size": 10**12}, "size must be a whole number from 1 to 1,000,000,000, not 10"),
        ({"repeats": True}, "repeats must be a whole number from 1 to 1,000,000,000, not True"),
    ],
)
def test_a_calibrate_request_checks_itself_as_it_is_made(fields, said) -> None:
    import accelbench

    with pytest.raises(UsageError, match=said):
        accelbench.CalibrateRequest(**fields)
