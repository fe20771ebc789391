# GPU batch C: the harness check again with samples of at least 250 ms, the seed benchmark's
# check with more rounds, the largest resnet50 batch, and the seed table for the README.
#   bash benchmarks/h200_c.sh      (writes $OUT/out_c.tgz)
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/wc; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_c.tgz -C /tmp wc; }
ab() { python3 -m accelbench "$@"; }
python3 benchmarks/harness_check.py --config resnet50:train:bf16:256:cl \
  --config resnet50:infer:bf16:32:cl --rounds 5 | tee $W/harness.jsonl; save
python3 benchmarks/harness_check.py --config seed-cnn:train:fp32:64 --rounds 15 --seconds 1 \
  | tee -a $W/harness.jsonl; save
ab run --devices cpu,cuda --db $DB --quiet | tee $W/seed_table.txt; save
ab run resnet50 --devices cuda --precisions bf16 --max-batch --timeout 120 --db $DB --quiet \
  | tee $W/maxbatch.txt; save
ab results --db $DB --json > $W/results.json; save
