# GPU batch K (issue 13): llama-1b generation on the H200, accelbench and a hand-written loop
# in the same command.   bash benchmarks/h200_k.sh   (writes $OUT/out_k.tgz)
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/wk; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_k.tgz -C /tmp wk; }
timed() { local name=$1; shift; local t0=$(date +%s); "$@" > $W/$name.txt 2>$W/$name.err
  echo "$name: $(( $(date +%s) - t0 )) s" | tee -a $W/walls.txt; save; }
for b in 1 16 64; do
  timed ref$b timeout 90 python3 benchmarks/llm_reference.py --batch $b --prompt 512 --new 128 --runs 5
done
timed llama timeout 150 python3 -m accelbench run llama-1b --modes generate --devices cuda \
  --precisions bf16 --batch-sizes 1,16,64 --prompt-lengths 512 --new-tokens 128 --blocks 5 --db $DB --quiet
python3 -m accelbench results --db $DB --json > $W/results.json; save
