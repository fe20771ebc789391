# GPU batch F (issue 11): the optimization search on seed 000's CNN and resnet50 training, and
# each variant's overhead beyond its timed seconds with forked workers and with spawned ones.
#   bash benchmarks/h200_f.sh   (writes $OUT/out_f.tgz)
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/wf; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_f.tgz -C /tmp wf; }
ab() { python3 -m accelbench "$@"; }
timed() { local name=$1; shift; local t0=$(date +%s.%N); "$@" > $W/$name.txt 2>$W/$name.err
  echo "$name wall $(echo "$(date +%s.%N) - $t0" | bc) s" | tee -a $W/walls.txt; save; }
# seed 000's CNN training: target 4.5x fp32 eager or more, no ERROR row, under 2 minutes
timed seed_train timeout 200 python3 -m accelbench optimize seed-cnn --device cuda --mode train --db $DB --quiet
# the same levers' first variants with spawned workers (before the forkserver), for overheads
timed seed_spawn timeout 90 env ACCELBENCH_START=spawn python3 -m accelbench optimize seed-cnn \
  --device cuda --mode train --levers precision,cuda_graphs --budget 60 --db $DB --quiet
# resnet50 training at batch 256: at least ~6,700 img/s at fixed batch, the search under 5 min
timed resnet_train timeout 330 python3 -m accelbench optimize resnet50 --device cuda --mode train --batch-size 256 --db $DB --quiet
ab results --db $DB --json > $W/results.json; save
