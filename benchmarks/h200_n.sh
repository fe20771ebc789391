# GPU batch N (issue 27, after issue 25): the main job's table with the interval on samples/s,
# optimize after it races only gains of 3% or more, generation's TTFT/TPOT/ITL on llama-1b,
# and (part "drift") optimize on llama-1b generate with the drift measure for random weights.
#   bash benchmarks/h200_n.sh run      (writes $OUT/out_n_run.tgz)
#   bash benchmarks/h200_n.sh drift    (writes $OUT/out_n_drift.tgz)
#   bash benchmarks/h200_n.sh drift2   (a shorter generation; writes $OUT/ol2.db, ol2.json, ...)
export PYTHONPATH=src PYTHONUNBUFFERED=1 COLUMNS=250
part=$1; W=/tmp/wn_$part; mkdir -p $W
save() { tar czf $OUT/out_n_$part.tgz -C /tmp wn_$part; }
timed() { local name=$1; shift; local t0=$(date +%s); "$@" > $W/$name.txt 2>$W/$name.err
  echo "$name: $(( $(date +%s) - t0 )) s" | tee -a $W/walls.txt; save; }
AB="python3 -m accelbench"
GEN="run llama-1b --modes generate --devices cuda --precisions bf16 --prompt-lengths 512"
GEN="$GEN --new-tokens 128 --blocks 5"
case $part in
run)
  python3 -c "import torch, transformers, sys; print(sys.version, torch.__version__, transformers.__version__)" > $W/versions.txt
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv >> $W/versions.txt
  timed main timeout 120 $AB run --db $W/main.db
  timed opt_seed timeout 200 $AB optimize seed-cnn --device cuda --mode train --db $W/os.db
  timed gen_eager timeout 150 $AB $GEN --batch-sizes 1,64 --db $W/gen.db
  timed gen_static timeout 200 $AB $GEN --batch-sizes 1,64 --kv-cache static --compile reduce-overhead --db $W/gen.db
  for f in $W/*.db; do $AB results --db $f --json > ${f%.db}.json; done; save ;;
drift)
  timed opt_llama timeout 560 $AB optimize llama-1b --device cuda --mode generate --prompt-length 512 --new-tokens 128 --db $W/ol.db
  for f in $W/*.db; do $AB results --db $f --json > ${f%.db}.json; done; save ;;
drift2)  # a shorter generation, writing straight to $OUT: bf16's drift end to end
  $AB optimize llama-1b --device cuda --mode generate --prompt-length 128 --new-tokens 32 \
    --levers precision,kv_cache --budget 420 --db $OUT/ol2.db > $OUT/opt_llama2.txt 2>&1
  $AB results --db $OUT/ol2.db --json > $OUT/ol2.json ;;
esac
