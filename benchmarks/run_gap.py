"""Is `accelbench run`'s slower compiled decode step (issue 13, batch L) in the configuration
accelbench builds, in the pipeline that measures it, or in the worker process it runs in?

Batch L measured llama-1b bf16 with a static cache and reduce-overhead: `run`'s decode step
12-16% slower than the hand-written reference's at batch 1, while accelbench's own loop
(`generate_once`) on the reference's model agreed with it to 0.3% (benchmarks/generate_gap.py).
This measures, in one plain process, no worker:

1. `run_config`, the whole pipeline `run` executes in its worker (build, meters, timed blocks);
2. then, interleaved run by run, accelbench's loop on what `build` makes (its model, static
   cache and compiled forward) and on what the reference makes (llm_reference's model, cache
   and `torch.compile(model.forward, mode="reduce-overhead", dynamic=False)`).

If (1) is slow here too the cause is in the pipeline; if (2)'s build way is slow, in the build;
if neither, in the worker process. Prints one JSON line per batch, times in ms:

    PYTHONPATH=src python3 benchmarks/run_gap.py --batches 1 --runs 6
    PYTHONPATH=src python3 benchmarks/run_gap.py --tiny --device cpu --runs 2   # a dry run
"""

import json
import statistics
import sys
import time
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).parent))
import llm_reference  # noqa: E402

from accelbench.backends import build  # noqa: E402
from accelbench.backends.generate import generate_once  # noqa: E402
from accelbench.devices import resolve_devices  # noqa: E402
from accelbench.engine.measure import StopRule  # noqa: E402
from accelbench.engine.runner import make_spec, run_config  # noqa: E402
from accelbench.workloads import get_workload  # noqa: E402


def main() -> None:
    parser = llm_reference.loop_arguments(runs=6)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="gpt2's workload, for a dry run")
    args = parser.parse_args()
    workload = get_workload("gpt2" if args.tiny else "llama-1b")
    device = resolve_devices(args.device)[0]
    for batch in (int(b) for b in args.batches.split(",")):
        gpu = args.device == "cuda"
        spec = make_spec(
            workload, device, mode="generate", precision="bf16" if gpu else "fp32",
            batch_size=batch, prompt_length=args.prompt, new_tokens=args.new,
            kv_cache="static", compile="reduce-overhead" if gpu else "default",
        )  # fmt: skip
        out = {"batch": batch, "torch": torch.__version__}
        out["pipeline"] = pipeline(spec, workload, device, args)
        out.update(loops(spec, workload, device, args))
        print(json.dumps(out), flush=True)


def pipeline(spec, workload, device, args) -> dict:
    """`run_config` as the worker calls it, in this process."""
    stop = StopRule(blocks=args.runs, warmup=2, min_sample_s=0.0)
    result = run_config(spec, workload, device, stop, probe=False)
    if result.status != "ok":
        return {"status": result.status, "error": result.error}
    generation = result.metrics["generation"]
    return {
        "decode_median_ms": generation["token_p50_s"] * 1e3,
        "decode_p90_ms": generation["token_p90_s"] * 1e3,
        "prefill_median_ms": statistics.median(generation["prefill_s"]) * 1e3,
        "graph_breaks": generation.get("graph_breaks"),
        "cudagraph_skips": generation.get("cudagraph_skips"),
        "other_cpu_cores": result.metrics["machine_state"].get("other_cpu_cores"),
        "other_cpu_busiest": result.metrics["machine_state"].get("other_cpu_busiest"),
    }


def loops(spec, workload, device, args) -> dict:
    """accelbench's loop on build()'s objects and on the reference's, interleaved run by run."""
    prep = build(spec, workload, device)
    ours = (prep.model, prep.batch[0], prep.kv_cache, prep.decode)
    config = llm_reference.llama_config() if not args.tiny else prep.model.config
    torch.manual_seed(0)
    dtype = next(prep.model.parameters()).dtype
    model = transformers.AutoModelForCausalLM.from_config(config).to(device.torch_device, dtype)
    model.eval()
    cache = llm_reference.static_cache(model, spec.batch_size, args.prompt + args.new)
    compiled = torch.compile(model.forward, mode=str(prep.spec.lever("compile", "")), dynamic=False)
    theirs = (model, prep.batch[0], cache, compiled)
    ways = {"build": ours, "reference_objects": theirs}
    steps = {way: [] for way in ways}
    prefills = {way: [] for way in ways}
    with torch.inference_mode():
        for run in range(args.runs + 2):  # two warm-up rounds
            for way, (net, prompt, kv, decode) in ways.items():
                phases = generate_once(
                    net, prompt, args.new, device.synchronize, time.perf_counter, kv, decode
                )
                if run >= 2:
                    prefills[way].append(phases.prefill_s)
                    steps[way].extend(phases.token_s)
    return {
        way: {
            "decode_median_ms": statistics.median(steps[way]) * 1e3,
            "decode_p90_ms": statistics.quantiles(steps[way], n=10)[-1] * 1e3,
            "prefill_median_ms": statistics.median(prefills[way]) * 1e3,
            "model_training": ways[way][0].training,
        }
        for way in ways
    }


if __name__ == "__main__":
    main()
