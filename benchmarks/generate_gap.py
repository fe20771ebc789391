"""Where accelbench's compiled decode step and the hand-written reference's part (issue 13).

Batch L's short part measured llama-1b bf16 with a static cache and reduce-overhead: accelbench's
decode step 2.18 ms at batch 1 and 5.60 ms at 64, the reference's 1.94 and 5.04 ms (+12%, +11%),
each in its own process. This runs both loops in one process, on one model and one compiled
forward, interleaved run by run, and accelbench's loop a third way with its GPU-state sampler
(NVML every 0.2 s on a thread) running, as it does inside `accelbench run`:

    PYTHONPATH=src python3 benchmarks/generate_gap.py --batches 1,64 --runs 6
    PYTHONPATH=src python3 benchmarks/generate_gap.py --fork   # the same, in a forked worker
    PYTHONPATH=src python3 benchmarks/generate_gap.py --tiny --device cpu   # a dry run here

`--fork` runs it all in a child of a fork server that preloaded what accelbench's preloads
(engine/worker.PRELOAD), as `accelbench run` measures: if the gap appears there, the fork
server is its cause. Prints one JSON line per batch: each way's decode-step median and p90
(ms), and prefill median.
"""

import json
import signal
import statistics
import sys
import time
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).parent))
import llm_reference  # noqa: E402

from accelbench.backends.generate import generate_once  # noqa: E402
from accelbench.devices.state import NvmlState, StateMeter  # noqa: E402


def main() -> None:
    parser = llm_reference.loop_arguments(runs=6)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="a 2-layer model, for a dry run")
    parser.add_argument("--fork", action="store_true", help="run in a fork-server child")
    args = parser.parse_args()
    if args.fork:
        forked(args)
    else:
        measure_all(args)


def forked(args) -> None:
    import multiprocessing

    from accelbench.engine.worker import PRELOAD

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    child = context.Process(target=measure_all, args=(args,))
    child.start()
    # `timeout` stops this process with SIGTERM: the child must not keep the GPU after it
    signal.signal(signal.SIGTERM, lambda *_: (child.kill(), sys.exit(143)))
    child.join()
    sys.exit(child.exitcode)


def measure_all(args) -> None:
    args.static_compile, args.no_sync = True, False
    config = llm_reference.llama_config()
    if args.tiny:
        config = transformers.LlamaConfig(
            hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=128, vocab_size=1000,
        )  # fmt: skip
    torch.manual_seed(0)
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    model = transformers.LlamaForCausalLM(config).to(args.device, dtype).eval()
    for batch in (int(b) for b in args.batches.split(",")):
        shape = (batch, args.prompt)
        prompt = torch.randint(0, config.vocab_size, shape, device=args.device)
        print(json.dumps(compare(model, prompt, args)), flush=True)


def compare(model, prompt, args) -> dict:
    names = llm_reference.forward_parameters(model)
    cache_name = llm_reference.cache_argument(names)
    cache = llm_reference.static_cache(model, prompt.shape[0], args.prompt + args.new)
    decode = torch.compile(model.forward, mode="reduce-overhead", dynamic=False)
    sync = torch.cuda.synchronize if args.device == "cuda" else lambda: None
    ways = {"reference": [], "accelbench": [], "accelbench+sampler": []}
    prefills = {way: [] for way in ways}
    with torch.inference_mode():
        for run in range(args.runs + 2):  # two warm-up rounds
            for way, steps in ways.items():
                if way == "reference" and args.device == "cuda":
                    p, s = llm_reference.generate(
                        model, decode, prompt, args, cache, cache_name, names
                    )
                else:
                    with sampler(way.endswith("sampler") and args.device == "cuda"):
                        phases = generate_once(
                            model, prompt, args.new, sync, time.perf_counter, cache, decode
                        )
                    p, s = phases.prefill_s, list(phases.token_s)
                if run >= 2:
                    prefills[way].append(p)
                    steps.extend(s)
    out: dict = {"batch": prompt.shape[0], "torch": torch.__version__}
    for way, steps in ways.items():
        out[way] = {
            "decode_median_ms": statistics.median(steps) * 1e3,
            "decode_p90_ms": statistics.quantiles(steps, n=10)[-1] * 1e3,
            "prefill_median_ms": statistics.median(prefills[way]) * 1e3,
        }
    return out


def sampler(on: bool):
    """accelbench's GPU-state sampler around a generation, or nothing."""
    import contextlib

    return StateMeter(NvmlState(0)) if on else contextlib.nullcontext()


if __name__ == "__main__":
    main()
