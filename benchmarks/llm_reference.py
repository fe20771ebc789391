"""A hand-written reference for `accelbench run llama-1b --modes generate` (issue 13): the
model's forward with its KV cache, greedy, timed with CUDA events, no accelbench code.

    python3 benchmarks/llm_reference.py --batches 1,16,64 --prompt 512 --new 128 --runs 10
    python3 benchmarks/llm_reference.py --batches 1 --static-compile   # StaticCache + compile

As transformers' generate() does, the prefill computes the head at the last position only
(logits_to_keep=1), and with --static-compile the decode steps run
torch.compile(model.forward, mode="reduce-overhead") on a StaticCache while the prefill runs
eagerly. Each step ends with a synchronize, as accelbench's do and as generate()'s stopping
check does (it reads the device every token), so the events also hold the host's gap between
steps; `--no-sync` leaves the loop asynchronous, the host running ahead, for the GPU's time
alone. Prints one JSON line per batch size: the prefill's median, and the decode step's median
and p90 over every timed step.
"""

import argparse
import inspect
import json
import statistics

import torch
import transformers


def main() -> None:
    parser = loop_arguments(runs=10)
    parser.add_argument("--static-compile", action="store_true")
    parser.add_argument("--no-sync", action="store_true")
    args = parser.parse_args()
    config = llama_config()
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16).eval()
    for batch in (int(b) for b in args.batches.split(",")):
        prompt = torch.randint(0, config.vocab_size, (batch, args.prompt), device="cuda")
        print(json.dumps(measure(model, prompt, args)), flush=True)


def loop_arguments(runs: int) -> argparse.ArgumentParser:
    """The options of a generation loop: batches, prompt and new tokens, timed runs."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="1")
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--runs", type=int, default=runs)
    return parser


def llama_config():
    """Llama-3.2-1B's sizes (random weights), as accelbench's llama-1b."""
    return transformers.LlamaConfig(
        hidden_size=2048,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        intermediate_size=8192,
        vocab_size=128256,
        tie_word_embeddings=True,
        max_position_embeddings=131072,
        rope_theta=500000.0,
    )


def measure(model, prompt, args) -> dict:
    names = forward_parameters(model)
    cache_name = cache_argument(names)
    cache, decode = None, model
    if args.static_compile:
        cache = static_cache(model, prompt.shape[0], args.prompt + args.new)
        decode = torch.compile(model.forward, mode="reduce-overhead", dynamic=False)
    prefills, steps = [], []
    with torch.inference_mode():
        for run in range(args.runs + 2):  # two warm-up generations
            p, s = generate(model, decode, prompt, args, cache, cache_name, names)
            if run >= 2:
                prefills.append(p)
                steps.extend(s)
    return {
        "batch": prompt.shape[0],
        "prompt": args.prompt,
        "new": args.new,
        "static_compile": args.static_compile,
        "sync_each_step": not args.no_sync,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "prefill_median_ms": statistics.median(prefills) * 1e3,
        "decode_step_median_ms": statistics.median(steps) * 1e3,
        "decode_step_p90_ms": statistics.quantiles(steps, n=10)[-1] * 1e3,
        "decode_tokens_per_s": prompt.shape[0] / statistics.median(steps),
        "prefill_ms": [p * 1e3 for p in prefills],
    }


def forward_parameters(model):
    return inspect.signature(type(model).forward).parameters


def cache_argument(names):
    return "cache" if "cache" in names else "past_key_values"  # transformers 5.2x's name


def static_cache(model, batch, length):
    wanted = inspect.signature(transformers.StaticCache.__init__).parameters
    given = {"config": model.config, "max_cache_len": length, "max_batch_size": batch}
    given.update(device=model.device, dtype=model.dtype)
    return transformers.StaticCache(**{k: v for k, v in given.items() if k in wanted})


def generate(model, decode, prompt, args, cache, cache_name, names):
    new = args.new
    events = [torch.cuda.Event(enable_timing=True) for _ in range(new + 1)]
    if cache is not None:
        cache.reset()
    position = torch.arange(prompt.shape[1], device="cuda")
    torch.cuda.synchronize()
    kwargs = {"use_cache": True, "logits_to_keep": 1, cache_name: cache}
    events[0].record()
    out = model(input_ids=prompt, **kwargs, **positions(names, position))
    token = out.logits[:, -1].argmax(dim=-1, keepdim=True)
    events[1].record()
    step_done(args)
    cache = out.get("cache") if out.get("cache") is not None else out.get("past_key_values")
    for i in range(new - 1):
        position = position[-1:] + 1
        kwargs[cache_name] = cache
        out = decode(input_ids=token, **kwargs, **positions(names, position))
        token = out.logits[:, -1].argmax(dim=-1, keepdim=True)
        events[i + 2].record()
        step_done(args)
    torch.cuda.synchronize()
    times = [a.elapsed_time(b) / 1e3 for a, b in zip(events[:-1], events[1:], strict=True)]
    return times[0], times[1:]


def step_done(args):
    if not args.no_sync:
        torch.cuda.synchronize()


def positions(names, position):
    """cache_position, where this transformers version's forward still takes it."""
    return {"cache_position": position} if "cache_position" in names else {}


if __name__ == "__main__":
    main()
