"""An independent check of accelbench's seed-cnn figure: seed 000's loop, timed by hand.

This does not use accelbench. It runs seed 000's training loop verbatim (model, data, loss,
optimizer) on one device and times it with torch.cuda.Event pairs: one pair around each epoch
of 20 steps (for a median) and one around all timed epochs (for a mean), after one warm-up
epoch. With --compare RUN.json it also reads `accelbench run --json` output and prints the
ratio of accelbench's median it/s to this loop's.

    python benchmarks/seed_reference.py --device cuda --epochs 100 --compare run.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class SimpleCNN(nn.Module):  # seed 000, verbatim
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 13 * 13, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 13 * 13)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def reference(device: str, epochs: int) -> dict:
    torch.manual_seed(0)
    net = SimpleCNN().to(device)
    inputs = torch.randn(64, 3, 64, 64).to(device)
    labels = torch.randint(0, 10, (64,)).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)

    def epoch():
        for _ in range(20):
            optimizer.zero_grad()
            loss = criterion(net(inputs), labels)
            loss.backward()
            optimizer.step()

    epoch()  # warm-up
    torch.cuda.synchronize()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(epochs + 1)]
    events[0].record()
    for i in range(epochs):
        epoch()
        events[i + 1].record()
    torch.cuda.synchronize()
    per_epoch = [events[i].elapsed_time(events[i + 1]) / 1000 for i in range(epochs)]
    total = events[0].elapsed_time(events[-1]) / 1000
    return {
        "device": device,
        "gpu": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "epochs": epochs,
        "median_it_per_s": 1 / statistics.median(per_epoch),
        "mean_it_per_s": epochs / total,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--compare", metavar="RUN_JSON", help="accelbench run --json output")
    args = parser.parse_args()
    ref = reference(args.device, args.epochs)
    if args.compare:
        with open(args.compare) as f:
            run = json.load(f)
        ours = next(r for r in run["results"] if r["spec"]["device"].startswith(args.device))
        ref["accelbench_median_it_per_s"] = ours["it_per_s"]["median"]
        ref["ratio_accelbench_over_reference"] = ours["it_per_s"]["median"] / ref["median_it_per_s"]
    json.dump(ref, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
