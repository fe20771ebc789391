"""A hand-written reference for `accelbench run llama-1b --modes generate` (issue 13): the
model's forward with its KV cache, greedy, timed with CUDA events, no accelbench code.

    python3 benchmarks/llm_reference.py --batch 1 --prompt 512 --new 128 --runs 5
"""

import argparse
import statistics

import torch
import transformers


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    config = transformers.LlamaConfig(  # Llama-3.2-1B's sizes, random weights
        hidden_size=2048,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        intermediate_size=8192,
        vocab_size=128256,
        tie_word_embeddings=True,
        max_position_embeddings=131072,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16).eval()
    prompt = torch.randint(0, config.vocab_size, (args.batch, args.prompt), device="cuda")
    prefills, steps = [], []
    with torch.inference_mode():
        for run in range(args.runs + 2):  # two warm-up generations
            p, s = generate(model, prompt, args.new)
            if run >= 2:
                prefills.append(p)
                steps.extend(s)
    decode = statistics.median(steps)
    print(
        f"reference llama-1b bf16 b{args.batch} p{args.prompt} n{args.new}: prefill median "
        f"{statistics.median(prefills) * 1e3:.3f} ms, decode step median {decode * 1e3:.3f} ms, "
        f"{args.batch / decode:,.0f} tokens/s"
    )


def generate(model, prompt, new):
    events = [torch.cuda.Event(enable_timing=True) for _ in range(new + 1)]
    events[0].record()
    out = model(input_ids=prompt, use_cache=True)
    token = out.logits[:, -1].argmax(dim=-1, keepdim=True)
    events[1].record()
    cache = out.past_key_values
    for i in range(new - 1):
        out = model(input_ids=token, past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        token = out.logits[:, -1].argmax(dim=-1, keepdim=True)
        events[i + 2].record()
    torch.cuda.synchronize()
    times = [a.elapsed_time(b) / 1e3 for a, b in zip(events[:-1], events[1:], strict=True)]
    return times[0], times[1:]


if __name__ == "__main__":
    main()
