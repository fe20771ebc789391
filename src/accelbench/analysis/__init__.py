"""What the numbers mean: FLOPs, the bottleneck verdict, MFU and roofline figures, drift from the
fp32 model, and comparisons with bootstrap intervals."""
