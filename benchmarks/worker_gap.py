"""Which part of accelbench's forked worker makes `run`'s compiled decode step slower (issue 13)?

Part gap2 of benchmarks/h200_l.sh found that `accelbench run` measures llama-1b's compiled
decode step (bf16, static cache, reduce-overhead, batch 1) at 2.14 ms through its fork server and
1.89 ms with ACCELBENCH_START=spawn; in a plain process its pipeline measured 1.94 ms, and a loop
in a fork-server child of a plain script 1.95 ms. This runs the CLI in this process once per
variant, its fork server preloading benchmarks/worker_probe.py too, which leaves one thing out of
the worker (see there) and writes where the worker's CPU time went:

    PYTHONPATH=src python3 benchmarks/worker_gap.py --out /tmp/probe as_is no_adopt no_watch \\
        gc_freeze spawn   # each variant's result in /tmp/probe/<variant>.db, its facts in .json
    PYTHONPATH=src python3 benchmarks/worker_gap.py --tiny ...   # gpt2 on the CPU, a dry run
"""

import argparse
import os
import sys
from pathlib import Path

HERE = str(Path(__file__).parent)
sys.path.insert(0, HERE)

from accelbench.cli.main import main as accelbench  # noqa: E402
from accelbench.engine import worker  # noqa: E402

GPU = (
    "llama-1b --devices cuda --precisions bf16 --prompt-lengths 512 --new-tokens 128 "
    "--batch-sizes 1 --kv-cache static --compile reduce-overhead --blocks 6"
)
CPU = "gpt2 --devices cpu --prompt-lengths 16 --new-tokens 8 --batch-sizes 1 --blocks 2"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("variants", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    worker.PRELOAD = (*worker.PRELOAD, "worker_probe")
    # Python 3.12's fork server ignores the sys.path it is given: it finds modules by PYTHONPATH
    os.environ["PYTHONPATH"] = os.pathsep.join([HERE, *filter(None, [os.getenv("PYTHONPATH")])])
    os.environ["GAP_OUT"] = args.out
    for variant in args.variants:
        os.environ["GAP_VARIANT"] = variant
        os.environ.pop(worker.START, None)
        if variant == "spawn":
            os.environ[worker.START] = "spawn"
        command = ["run", *(CPU if args.tiny else GPU).split(), "--modes", "generate"]
        code = accelbench([*command, "--db", f"{args.out}/{variant}.db", "--quiet"])
        print(f"{variant}: exit {code}", flush=True)


if __name__ == "__main__":
    main()
