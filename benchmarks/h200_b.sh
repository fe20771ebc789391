# GPU batch B (issue 3 figures): the harness check interleaved in one process, compile, CUDA
# graphs, precisions, seed 001's models. Run on the device machine from the repository root:
#   bash benchmarks/h200_b.sh      (writes $OUT/out_b.tgz)
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/wb; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_b.tgz -C /tmp wb; }
ab() { python3 -m accelbench "$@"; }
ab calibrate --devices cuda --db $DB > $W/calibrate.txt; save
python3 benchmarks/harness_check.py --config seed-cnn:train:fp32:64 \
  --config resnet50:train:bf16:256:cl --config resnet50:infer:bf16:32:cl | tee $W/harness.jsonl; save
ab run seed-cnn --devices cpu,cuda --cuda-graphs off,on --blocks 100 --db $DB --quiet | tee $W/seed_graphs.txt; save
ab run resnet50 --devices cuda --precisions bf16 --memory-formats channels_last --batch-sizes 256 \
  --compile off,default --max-time 10 --db $DB --quiet | tee $W/r50_compile.txt; save
ab run resnet50 --devices cuda --precisions fp32,tf32,bf16 --batch-sizes 128 --max-time 5 \
  --db $DB --quiet | tee $W/r50_precisions.txt; save
ab run bert-base vgg16 mobilenet_v3_large --devices cuda --precisions bf16 --max-time 5 \
  --db $DB --quiet | tee $W/zoo.txt; save
ab results --db $DB --json > $W/results.json; save
