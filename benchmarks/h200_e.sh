# GPU batch E (issue 11, before the search): which stacks pay on seed 000's CNN and resnet50,
# to design the search from measurements.   bash benchmarks/h200_e.sh   (writes $OUT/out_e.tgz)
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/we; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_e.tgz -C /tmp we; }
ab() { python3 -m accelbench "$@"; }
S="--devices cuda --modes train --max-time 3 --no-verdict --db $DB --quiet"
( time ab run seed-cnn $S --precisions fp32,tf32,bf16,fp16 --cuda-graphs off,on ) 2>&1 | tee $W/seed_graphs.txt; save
( time ab run seed-cnn $S --compile default,reduce-overhead,max-autotune-no-cudagraphs ) 2>&1 | tee $W/seed_compile.txt; save
( time ab run seed-cnn $S --compile default --cuda-graphs on --precisions fp32,bf16 ) 2>&1 | tee $W/seed_compile_graphs.txt; save
R="--devices cuda --modes train --max-time 4 --no-verdict --db $DB --quiet --memory-formats channels_last"
( time ab run resnet50 $R --precisions fp16,bf16 --compile default --batch-sizes 256,512 ) 2>&1 | tee $W/resnet.txt; save
ab results --db $DB --json > $W/results.json; save
