# GPU batch G (issue 11, after h200_f.sh): the search with max-autotune and the batch opt-in,
# eager drift for compiled training variants, 2 s per variant.
#   bash benchmarks/h200_g.sh   (writes $OUT/out_g.tgz)
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/wg; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_g.tgz -C /tmp wg; }
timed() { local name=$1; shift; local t0=$(date +%s); "$@" > $W/$name.txt 2>$W/$name.err
  echo "$name: $(( $(date +%s) - t0 )) s" | tee -a $W/walls.txt; save; }
# seed 000's CNN training: target 4.5x fp32 eager or more, no ERROR row, under 2 minutes
timed seed_train timeout 150 python3 -m accelbench optimize seed-cnn --device cuda --mode train --db $DB --quiet
# resnet50 training at batch 256: about 6,700 img/s or more at fixed batch, under 5 minutes
timed resnet_train timeout 320 python3 -m accelbench optimize resnet50 --device cuda --mode train --batch-size 256 --db $DB --quiet
python3 -m accelbench results --db $DB --json > $W/results.json; save
