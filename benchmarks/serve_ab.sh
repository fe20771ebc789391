#!/usr/bin/env bash
# Issue 35 on the lent H200: the batcher before and after a change, side by side in one call.
# OLD is a tree holding the earlier accelbench package (e.g. from `git archive REV src`); each
# side serves resnet50 (bf16, channels_last, CUDA graphs) at the defaults (10 ms bound, auto
# batching) in one process per invocation, the sides alternating PAIRS times.
#   PYTHONPATH is set here: LoadGen must be in /tmp/lg (pip install --target /tmp/lg ...)
#   bash benchmarks/serve_ab.sh OUTDIR OLD [PAIRS]
set -uo pipefail
out="${1:?usage: serve_ab.sh OUTDIR OLD [PAIRS]}"; old="${2:?the old tree}"; pairs="${3:-3}"
mkdir -p "$out"
side() {  # NAME TREE
    local name="$1" tree="$2" start=$SECONDS
    PYTHONPATH="$tree:/tmp/lg" python3 -m accelbench run resnet50 --devices cuda --modes serve \
        --scenarios server,offline --precisions bf16 --memory-formats channels_last \
        --cuda-graphs on --rounds 1 --db "$out/$name.db" >>"$out/$name.txt" 2>>"$out/$name.err"
    echo "$name rc=$? wall=$((SECONDS - start))s" | tee -a "$out/walls.txt"
}
for i in $(seq "$pairs"); do side old "$old"; side new src; done
for name in old new; do
    PYTHONPATH=src python3 -m accelbench results export --out "$out/$name.json" --db "$out/$name.db"
done
