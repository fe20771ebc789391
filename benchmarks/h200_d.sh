# GPU batch D (after the redesign): the levers as registered objects, the split device layer and
# the new backends, run on CUDA against the reference figures of DESIGN.md and BENCHMARKS.md.
#   bash benchmarks/h200_d.sh      (writes $OUT/out_d.tgz)
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/wd; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_d.tgz -C /tmp wd; }
ab() { python3 -m accelbench "$@"; }
ab devices | tee $W/devices.txt; save
# seed 000's benchmark: eager and in a CUDA graph (reference 28.5 and 103.6 it/s)
ab run seed-cnn --devices cuda --cuda-graphs off,on --db $DB --quiet | tee $W/seed.txt; save
# resnet50 training: fp32 and tf32 at 128 (1,009 and 2,137 img/s); bf16 + channels_last with
# and without compile at 256 (4,716 and 6,660 img/s)
ab run resnet50 --devices cuda --precisions fp32,tf32 --batch-sizes 128 --max-time 8 \
  --no-verdict --db $DB --quiet | tee $W/resnet_fp32.txt; save
ab run resnet50 --devices cuda --precisions bf16 --memory-formats channels_last \
  --compile off,default --batch-sizes 256 --max-time 8 --no-verdict --db $DB --quiet \
  | tee $W/resnet_bf16.txt; save
ab compare --by compile --db $DB | tee $W/compare_compile.txt; save
# the optimize ladder generated from the registry, on seed 000's model
ab optimize seed-cnn --device cuda --mode train --max-time 3 --db $DB | tee $W/optimize.txt; save
ab results --db $DB --json > $W/results.json; save
