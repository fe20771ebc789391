"""Peak figures of a device: what its maker publishes, and what calibration measures here.

Utilization (MFU, bandwidth use) divides a measured rate by a peak, so the peak must say where it
came from. `known_peaks` looks a device model up in a table of published dense figures, each with
its source; `calibrate` measures this machine's matrix-product rate and copy bandwidth instead.

The table's rules:
- Dense figures only. Datasheets that quote tensor-core rates "with sparsity" are halved.
- fp32 is the plain (non-tensor-core) FP32 rate; tf32 is what a float32 matmul gets with TF32
  allowed. On GeForce cards fp16/bf16 are the rates with FP32 accumulation, the mode PyTorch's
  matmuls use; the FP16-accumulate rate GeForce datasheets also quote is twice that.
- A figure the maker does not publish, or that we could not confirm, is left out, not estimated.
- Where one model name covers several configurations (Apple chips binned by GPU core count, a
  2022 RTX 3080 12GB beside the 10GB), the figure is the one the source string names.
Rated clocks are not ceilings: GeForce cards often boost past them, so a measured rate can
exceed a datasheet peak. `calibrate` is the honest reference for a given machine.
"""

from __future__ import annotations

import datetime
import re
import statistics
from collections.abc import Callable, Sequence
from types import MappingProxyType

import torch

from ..core.peaks import PeakFigures
from ..errors import UsageError
from .base import Device
from .tf32_switch import TF32_OVERRIDE, tf32, tf32_forced

__all__ = ["PeakFigures", "known_peaks", "calibrate"]


T = 1e12  # FLOP/s in a TFLOPS
GB = 1e9  # bytes/s in a GB/s (datasheets use decimal units)


def _peaks(source: str, bandwidth: float | None = None, **flops: float) -> PeakFigures:
    return PeakFigures(flops=MappingProxyType(flops), bandwidth=bandwidth, source=source)


# --- NVIDIA data-centre GPUs: product datasheets ---------------------------------------------

# NVIDIA H100 Tensor Core GPU datasheet, SXM column: FP32 67 TF; TF32 989, BF16 and FP16
# 1,979 TF with sparsity; 3.35 TB/s.
_H100_SXM = _peaks(
    "NVIDIA H100 datasheet (SXM5; sparse tensor figures halved)",
    bandwidth=3.35e12,
    fp32=67 * T,
    tf32=989 * T / 2,
    fp16=1979 * T / 2,
    bf16=1979 * T / 2,
)
# Same datasheet, PCIe column: FP32 51 TF; TF32 756, BF16 and FP16 1,513 TF with sparsity; 2 TB/s.
_H100_PCIE = _peaks(
    "NVIDIA H100 datasheet (PCIe; sparse tensor figures halved)",
    bandwidth=2.0e12,
    fp32=51 * T,
    tf32=756 * T / 2,
    fp16=1513 * T / 2,
    bf16=1513 * T / 2,
)
# NVIDIA H200 Tensor Core GPU datasheet, SXM column: the H100 SXM's compute (FP32 67 TF; TF32 989,
# BF16 and FP16 1,979 TF with sparsity) with 4.8 TB/s of HBM3e.
_H200 = _peaks(
    "NVIDIA H200 datasheet (SXM; sparse tensor figures halved)",
    bandwidth=4.8e12,
    fp32=67 * T,
    tf32=989 * T / 2,
    fp16=1979 * T / 2,
    bf16=1979 * T / 2,
)


# NVIDIA A100 Tensor Core GPU datasheet: FP32 19.5 TF; TF32 156 TF, BF16 and FP16 312 TF dense
# (the datasheet gives dense and sparse), the same for SXM and PCIe. Only the memory differs:
# 40GB 1,555 GB/s (both forms), 80GB PCIe 1,935 GB/s, 80GB SXM 2,039 GB/s.
def _a100(variant: str, bandwidth: float) -> PeakFigures:
    return _peaks(
        f"NVIDIA A100 datasheet ({variant})",
        bandwidth=bandwidth,
        fp32=19.5 * T,
        tf32=156 * T,
        fp16=312 * T,
        bf16=312 * T,
    )


# NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3 TF; TF32 120, BF16 and FP16 242 TF with
# sparsity; 300 GB/s.
_L4 = _peaks(
    "NVIDIA L4 datasheet (sparse tensor figures halved)",
    bandwidth=300 * GB,
    fp32=30.3 * T,
    tf32=120 * T / 2,
    fp16=242 * T / 2,
    bf16=242 * T / 2,
)


# --- NVIDIA GeForce: architecture whitepapers, else NVIDIA's product pages ---------------------


def _geforce(source: str, fp32: float, tensor: float, bandwidth: float) -> PeakFigures:
    """Ampere and Ada GeForce: TF32 runs at the FP32 rate, fp16/bf16 (FP32 accumulate) at twice."""
    return _peaks(source, bandwidth=bandwidth, fp32=fp32, tf32=fp32, fp16=tensor, bf16=tensor)


_AMPERE = "NVIDIA Ampere GA102 GPU Architecture whitepaper v2.0"
_ADA = "NVIDIA Ada GPU Architecture whitepaper"
# The GA102 whitepaper's GeForce tables: FP32 TFLOPS, FP16/BF16 tensor TFLOPS with FP32
# accumulate (dense), TF32 tensor TFLOPS (dense, equal to FP32), memory bandwidth.
_RTX_3090 = _geforce(_AMPERE, fp32=35.6 * T, tensor=71 * T, bandwidth=936 * GB)
_RTX_3080 = _geforce(f"{_AMPERE} (10GB model)", fp32=29.8 * T, tensor=59.5 * T, bandwidth=760 * GB)
_RTX_3070 = _geforce(_AMPERE, fp32=20.3 * T, tensor=40.6 * T, bandwidth=448 * GB)
# The RTX 3060 is not in the whitepaper. FP32 is NVIDIA's published 3,584 CUDA cores x 1.777 GHz
# boost x 2 (its product page rounds to 13 TFLOPS). Its tensor rates with FP32 accumulate are not
# published (only a sparse FP16-accumulate "101 tensor TFLOPS"), and its bandwidth differs
# between the 12GB and 8GB models, which report the same name: both left out.
_RTX_3060 = _peaks("NVIDIA RTX 3060 specifications (3,584 cores x 1.777 GHz x 2)", fp32=12.74 * T)
# The Ada whitepaper's appendix (RTX 4090, RTX 4080 16GB): same columns as above.
_RTX_4090 = _geforce(_ADA, fp32=82.6 * T, tensor=165.2 * T, bandwidth=1008 * GB)
_RTX_4080 = _geforce(_ADA, fp32=48.7 * T, tensor=97.5 * T, bandwidth=716.8 * GB)
# The RTX 4070 and 4060 are not in the whitepaper. NVIDIA's product pages give FP32 (29 and 15
# shader TFLOPS: 5,888 cores x 2.475 GHz x 2, 3,072 x 2.46 GHz x 2) and the memory (192-bit
# GDDR6X at 21 Gbps; 128-bit GDDR6 at 17 Gbps); tensor rates only as sparse FP8 "AI TOPS",
# from which the FP32-accumulate rates cannot be read off: left out.
_RTX_4070 = _peaks(
    "NVIDIA RTX 4070 specifications (GDDR6X model)", bandwidth=504 * GB, fp32=29.15 * T
)
_RTX_4060 = _peaks("NVIDIA RTX 4060 specifications", bandwidth=272 * GB, fp32=15.11 * T)
# NVIDIA's RTX 5090 and 5080 product pages: FP32 is 21,760 cores x
# 2.407 GHz x 2 (RTX 5090) and 10,752 x 2.617 GHz x 2 (RTX 5080); memory 512-bit GDDR7 at 28 Gbps
# and 256-bit at 30 Gbps. We could not confirm the dense FP32-accumulate tensor rates of GeForce
# Blackwell from the whitepaper (users measure 220-240 TFLOPS bf16 on a 5090): left out.
_RTX_5090 = _peaks("NVIDIA RTX 5090 specifications", bandwidth=1792 * GB, fp32=104.8 * T)
_RTX_5080 = _peaks("NVIDIA RTX 5080 specifications", bandwidth=960 * GB, fp32=56.3 * T)


# --- Apple silicon: Apple's announcements -----------------------------------------------------
# Apple's GPU "teraflops" are FP32, derived as ALU count x clock x 2 (M1: 1,024 ALUs x 1.278 GHz
# x 2 = 2.6 TF); we could confirm Apple's own figures only for M1, M1 Pro and M1 Max, at their
# largest GPU configurations. Apple publishes no tf32 (Metal has no TF32 mode), fp16 or bf16
# rates. For the other chips we found no FLOPS figure from Apple, and third-party estimates rest
# on GPU clocks Apple does not publish: left out, as is the M1's bandwidth (Apple gave none).
# Bandwidths are Apple's figures for the chip; where they depend on the configuration the
# source says which one.


def _apple(
    chip: str, bandwidth: float | None, fp32: float | None = None, note: str = ""
) -> PeakFigures:
    source = f"Apple {chip} announcement{f' ({note})' if note else ''}"
    flops = {"fp32": fp32} if fp32 is not None else {}
    return _peaks(source, bandwidth=bandwidth, **flops)


_APPLE = {
    "Apple M1": _apple("M1", None, 2.6 * T, "8-core GPU; the 7-core GPU is slower"),
    "Apple M1 Pro": _apple("M1 Pro", 200 * GB, 5.2 * T, "16-core GPU; the 14-core is slower"),
    "Apple M1 Max": _apple("M1 Max", 400 * GB, 10.4 * T, "32-core GPU; the 24-core is slower"),
    "Apple M1 Ultra": _apple("M1 Ultra", 800 * GB),
    "Apple M2": _apple("M2", 100 * GB),
    "Apple M2 Pro": _apple("M2 Pro", 200 * GB),
    "Apple M2 Max": _apple("M2 Max", 400 * GB),
    "Apple M2 Ultra": _apple("M2 Ultra", 800 * GB),
    "Apple M3": _apple("M3", 100 * GB),
    "Apple M3 Pro": _apple("M3 Pro", 150 * GB),
    "Apple M3 Max": _apple("M3 Max", 400 * GB, note="40-core GPU; the 30-core has 300 GB/s"),
    "Apple M3 Ultra": _apple("M3 Ultra", 819 * GB),
    "Apple M4": _apple("M4", 120 * GB),
    "Apple M4 Pro": _apple("M4 Pro", 273 * GB),
    "Apple M4 Max": _apple("M4 Max", 546 * GB, note="40-core GPU; the 32-core has 410 GB/s"),
}

# Model names as PyTorch reports them (torch.cuda.get_device_properties(i).name) or, for Apple,
# as the chip calls itself (sysctl machdep.cpu.brand_string).
_TABLE: dict[str, PeakFigures] = {
    "NVIDIA H100 80GB HBM3": _H100_SXM,
    "NVIDIA H100 PCIe": _H100_PCIE,
    "NVIDIA H200": _H200,
    "NVIDIA A100-SXM4-40GB": _a100("SXM4 40GB", 1555 * GB),
    "NVIDIA A100-SXM4-80GB": _a100("SXM4 80GB", 2039 * GB),
    "NVIDIA A100-SXM-80GB": _a100("SXM4 80GB", 2039 * GB),
    "NVIDIA A100-PCIE-40GB": _a100("PCIe 40GB", 1555 * GB),
    "NVIDIA A100 80GB PCIe": _a100("PCIe 80GB", 1935 * GB),
    "NVIDIA L4": _L4,
    "NVIDIA GeForce RTX 3060": _RTX_3060,
    "NVIDIA GeForce RTX 3070": _RTX_3070,
    "NVIDIA GeForce RTX 3080": _RTX_3080,
    "NVIDIA GeForce RTX 3090": _RTX_3090,
    "NVIDIA GeForce RTX 4060": _RTX_4060,
    "NVIDIA GeForce RTX 4070": _RTX_4070,
    "NVIDIA GeForce RTX 4080": _RTX_4080,
    "NVIDIA GeForce RTX 4090": _RTX_4090,
    "NVIDIA GeForce RTX 5080": _RTX_5080,
    "NVIDIA GeForce RTX 5090": _RTX_5090,
    **_APPLE,
}


def _normalize(name: str) -> str:
    """Case, hyphens and runs of spaces do not matter; vendor words may be left off."""
    words = re.sub(r"[-_\s]+", " ", name.strip().lower()).split()
    while words and words[0] in ("nvidia", "geforce", "apple"):
        words.pop(0)
    return " ".join(words)


_BY_NAME = {_normalize(name): figures for name, figures in _TABLE.items()}


def known_peaks(device_model: str) -> PeakFigures | None:
    """Published peak figures for a device model, or None when the table lacks it.

    The whole name must match (an "RTX 3090 Ti" is not an "RTX 3090"), ignoring case, hyphens
    and a leading "NVIDIA", "GeForce" or "Apple".
    """
    return _BY_NAME.get(_normalize(device_model))


# --- calibration ------------------------------------------------------------------------------

# precision -> (dtype, whether float32 products may use TF32)
_PRECISIONS: dict[str, tuple[torch.dtype, bool]] = {
    "fp32": (torch.float32, False),
    "tf32": (torch.float32, True),
    "fp16": (torch.float16, False),
    "bf16": (torch.bfloat16, False),
}
_WARMUP = 2  # calls at least, however long the warm-up seconds
_Runs = tuple[float, int]  # warm-up seconds, timed repeats
MiB = 2**20
GiB = 2**30


def calibrate(
    device: Device,
    precisions: Sequence[str] = ("fp32", "tf32", "fp16", "bf16"),
    size: int | None = None,
    repeats: int = 10,
) -> PeakFigures:
    """Measure `device`'s dense matrix-product rate per precision and its copy bandwidth.

    Each rate is 2*size^3 FLOPs over the median time of `repeats` products of two random
    size x size matrices, after warm-up; precisions missing from `device.dtypes` are skipped.
    Bandwidth is bytes read plus bytes written by a device-to-device copy, over its median time.

    The rates are sustained ones, what a long run can count on: on an H200 (torch 2.11) four
    calibrations gave bf16 640-681, tf32 333-344 and fp32 51 TFLOP/s and 4.1 TB/s, where products
    timed straight after idle, before the clocks settled, gave up to 770 bf16.
    """
    unknown = [p for p in precisions if p not in _PRECISIONS]
    if unknown:
        raise UsageError(f"unknown precision {unknown[0]!r}; choose from {', '.join(_PRECISIONS)}")
    if repeats < 1 or (size is not None and size < 1):
        raise UsageError(f"need size >= 1 and repeats >= 1, got {size} and {repeats}")
    order, copy_bytes, warmup = _defaults(device)
    order = size or order
    runnable = [p for p in precisions if p in device.dtypes.names()]
    # A private generator: calibrating must not shift the random draws of a run that follows.
    generator = torch.Generator(device=device.torch_device).manual_seed(0)
    with device.context():
        flops = {p: _matmul_rate(device, p, order, (warmup, repeats), generator) for p in runnable}
        bandwidth = _copy_bandwidth(device, copy_bytes, (warmup, repeats), generator)
    source = (
        f"calibrated on this machine {datetime.date.today().isoformat()} ({device.name}: "
        f"{order}x{order} matrix products, {copy_bytes // MiB} MiB copy, median of {repeats})"
    )
    if "fp32" in flops and device.dtypes.tf32 and tf32_forced():
        source += f"; {TF32_OVERRIDE}=1 made the fp32 products run as TF32"
    return _peaks(source, bandwidth=bandwidth, **flops)


def _defaults(device: Device) -> tuple[int, int, float]:
    """Matrix order, copy size and warm-up seconds: full speed, without taking long or much memory.

    A CPU multiplies 100-1000x slower than a GPU and may emulate fp16/bf16, so order 1024 keeps
    it to seconds; 256 MiB outruns most CPU caches. A GPU needs orders in the thousands to keep
    every multiprocessor busy: 8192 (768 MiB for three fp32 matrices) fills H100-class parts,
    4096 suits GPUs under 16 GiB. A 1 GiB copy lasts long enough to time (0.4 ms at 4.8 TB/s).
    A GPU also needs a warm-up measured in time, not calls: its clocks climb from idle and settle
    under load over a fraction of a second, while a product lasts about a millisecond.
    """
    if device.is_host:
        return 1024, 256 * MiB, 0.0
    if (device.total_memory or 0) >= 16 * GiB:
        return 8192, 1 * GiB, 0.5
    return 4096, 256 * MiB, 0.5


def _matmul_rate(
    device: Device, precision: str, order: int, runs: _Runs, generator: torch.Generator
) -> float:
    dtype, allow_tf32 = _PRECISIONS[precision]
    a, b = (
        torch.randn(order, order, dtype=dtype, device=device.torch_device, generator=generator)
        for _ in range(2)
    )
    out = torch.empty_like(a)
    with tf32(allow_tf32):
        seconds = _median_seconds(lambda: torch.mm(a, b, out=out), device, runs)
    return 2 * order**3 / seconds


def _copy_bandwidth(device: Device, nbytes: int, runs: _Runs, generator: torch.Generator) -> float:
    # Random data: nothing a driver or OS could skip as known zeros.
    source = torch.rand(nbytes // 4, device=device.torch_device, generator=generator)
    target = torch.empty_like(source)
    seconds = _median_seconds(lambda: target.copy_(source), device, runs)
    return 2 * source.nbytes / seconds  # every byte is read once and written once


def _median_seconds(operation: Callable[[], object], device: Device, runs: _Runs) -> float:
    """Median time of one `operation`, each timed alone between synchronizing boundaries.

    Warm-up calls (kernel selection, allocator growth, page faults, clocks ramping up) run for
    at least `_WARMUP` calls and the warm-up seconds, and are not kept.
    """
    warmup_seconds, repeats = runs
    warm: list[float] = []
    while len(warm) < _WARMUP or sum(warm) < warmup_seconds:
        warm.append(_time_once(operation, device))
    return statistics.median(_time_once(operation, device) for _ in range(repeats))


def _time_once(operation: Callable[[], object], device: Device) -> float:
    timer = device.timer()
    timer.start()
    operation()
    timer.stop()
    return timer.elapsed()
