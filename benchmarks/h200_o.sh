# GPU batch O (issue 28, after modes became objects and facts typed values): every path the
# redesign moved, end to end on CUDA, and the stored results through export, import and report.
# Also: does compiling in-process (TORCHINDUCTOR_COMPILE_THREADS=1) stop torch.compile's
# workers from loading the host during a compiled configuration's timed samples?
#   bash benchmarks/h200_o.sh        (writes $OUT/out_o.tgz)
export PYTHONPATH=src PYTHONUNBUFFERED=1 COLUMNS=250
W=/tmp/wo; mkdir -p $W
save() { tar czf $OUT/out_o.tgz -C /tmp wo; }
timed() { local name=$1; shift; local t0=$(date +%s); "$@" > $W/$name.txt 2>$W/$name.err
  echo "$name: rc $? $(( $(date +%s) - t0 )) s" | tee -a $W/walls.txt; save; }
AB="python3 -m accelbench"
python3 -c "import torch, transformers, sys; print(sys.version, torch.__version__, transformers.__version__)" > $W/versions.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv >> $W/versions.txt
timed main timeout 150 $AB run --db $W/main.db
timed gen timeout 120 $AB run gpt2-tiny --modes generate --devices cuda --precisions fp32,bf16 \
  --prompt-lengths 64 --new-tokens 16 --kv-cache dynamic,static --blocks 5 --db $W/gen.db
timed infer timeout 90 $AB run resnet50 --modes infer,train --devices cuda --precisions bf16 \
  --batch-sizes 64 --max-time 3 --db $W/main.db
timed opt timeout 150 $AB optimize seed-cnn --device cuda --mode infer --budget 120 --db $W/opt.db
# compile's worker processes during the timed samples: default threads, then in-process
timed compile_pool timeout 120 $AB run seed-cnn --devices cuda --modes train --compile default \
  --max-time 4 --db $W/compile.db
timed compile_inproc env TORCHINDUCTOR_COMPILE_THREADS=1 timeout 120 $AB run seed-cnn --devices cuda \
  --modes train --compile default --max-time 4 --db $W/compile1.db
for f in $W/*.db; do $AB results --db $f --json > ${f%.db}.json; done
timed export $AB results export --db $W/main.db --out $W/main.json
timed import $AB results import $W/main.json --db $W/imported.db
timed listing $AB results --db $W/imported.db
timed report $AB report --db $W/imported.db --out $W/report.html
save
