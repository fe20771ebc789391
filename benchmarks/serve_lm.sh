#!/usr/bin/env bash
# Issue 35, language models on the lent H200: Server QPS at LoadGen's TTFT and TPOT p99 bounds
# (the defaults, 2000 and 100 ms: MLPerf's llama3.1-8b Server), beside Offline's prompts/s and
# tokens/s, at serve's auto max batch and wait; llama-1b and gpt2, bf16, prompt 128, 32 tokens.
# Run from the tree's root with PYTHONPATH=src (and LoadGen on the path); writes under $1.
set -uo pipefail
out="${1:?usage: serve_lm.sh OUTDIR}"
mkdir -p "$out"
serve() {  # NAME, then run's arguments
    local name="$1"; shift
    local start=$SECONDS
    python3 -m accelbench run "$@" --devices cuda --modes serve --scenarios server \
        --precisions bf16 --prompt-lengths 128 --new-tokens 32 --rounds 1 \
        --db "$out/serve_lm.db" >"$out/$name.txt" 2>"$out/$name.err"
    echo "$name rc=$? wall=$((SECONDS - start))s" | tee -a "$out/walls.txt"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv >"$out/gpu.txt"
serve llama-1b llama-1b
serve gpt2 gpt2
python3 -m accelbench results export --out "$out/serve_lm.json" --db "$out/serve_lm.db"
