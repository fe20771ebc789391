# GPU batch H (issue 11, the code as it landed at stop 19): the resnet50 search at fixed batch,
# then with the batch lever allowed. One search per call (each takes about 5 minutes).
#   bash benchmarks/h200_h.sh fixed    (writes $OUT/out_h.tgz)
#   bash benchmarks/h200_h.sh batch
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/wh; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_h.tgz -C /tmp wh; }
timed() { local name=$1; shift; local t0=$(date +%s); "$@" > $W/$name.txt 2>$W/$name.err
  echo "$name: $(( $(date +%s) - t0 )) s" | tee -a $W/walls.txt; save; }
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,utilization.gpu --format=csv > $W/gpu.txt
case "$1" in
  # target: about 6,700 img/s or more at batch 256, the whole search under 5 minutes
  fixed) timed resnet_fixed timeout 330 python3 -m accelbench optimize resnet50 --device cuda \
           --mode train --batch-size 256 --db $DB --quiet ;;
  # target: 7,000 img/s or more with the batch lever allowed
  batch) timed resnet_batch timeout 560 python3 -m accelbench optimize resnet50 --device cuda \
           --mode train --batch-size 256 --levers precision,channels_last,compile,batch \
           --budget 480 --db $DB --quiet ;;
esac
python3 -m accelbench results --db $DB --json > $W/results_$1.json; save
