#!/usr/bin/env bash
# Issue 35 on the lent H200: Server QPS at a 10 ms p99 bound beside Offline, at serve's auto
# max batch and wait, for resnet50 (bf16, channels_last, CUDA graphs) and seed 000's CNN.
# Run from the tree's root with PYTHONPATH=src (and LoadGen on the path); writes under $1.
set -uo pipefail
out="${1:?usage: serve_auto.sh OUTDIR}"
mkdir -p "$out"
serve() {  # NAME, then run's arguments
    local name="$1"; shift
    local start=$SECONDS
    python3 -m accelbench run "$@" --devices cuda --modes serve --scenarios server,offline \
        --rounds 3 --db "$out/serve.db" >"$out/$name.txt" 2>"$out/$name.err"
    echo "$name rc=$? wall=$((SECONDS - start))s" | tee -a "$out/walls.txt"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv >"$out/gpu.txt"
serve resnet50 resnet50 --precisions bf16 --memory-formats channels_last --cuda-graphs on
serve seed-cnn seed-cnn --cuda-graphs on
python3 -m accelbench results export --out "$out/serve.json" --db "$out/serve.db"
