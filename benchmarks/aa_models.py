"""Two names for one workload, seed 000's CNN training, for an A/A check (issue 25): the same
work twice in one sweep, so any difference `compare` finds between them is noise called a
difference. `accelbench run benchmarks/aa_models.py:first benchmarks/aa_models.py:second`."""

from accelbench.workloads.seed import SeedCNN


def first() -> SeedCNN:
    workload = SeedCNN()
    workload.name = "seed-cnn-first"
    return workload


def second() -> SeedCNN:
    workload = SeedCNN()
    workload.name = "seed-cnn-second"
    return workload
