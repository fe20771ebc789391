# GPU batch I (issue 12): explain on the H200: busy share, launches, categories; profiled step
# against the measured median; run with and without --profile side by side.
#   bash benchmarks/h200_i.sh   (writes $OUT/out_i.tgz)
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/wi; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_i.tgz -C /tmp wi; }
timed() { local name=$1; shift; local t0=$(date +%s); "$@" > $W/$name.txt 2>$W/$name.err
  echo "$name: $(( $(date +%s) - t0 )) s" | tee -a $W/walls.txt; save; }
E="python3 -m accelbench explain --device cuda --mode train --db $DB --quiet"
# seed 000's CNN, fp32 eager at batch 64: device busy under 50%; its CUDA graph well above
timed seed_eager timeout 120 $E seed-cnn --batch-size 64 --trace $W/seed_eager.json
timed seed_graph timeout 120 $E seed-cnn --batch-size 64 --cuda-graphs on
# fp16 training: GradScaler reads found_inf on the host inside the step (a synchronization)
timed seed_fp16 timeout 120 $E seed-cnn --batch-size 64 --precision fp16
# resnet50 training bf16 + channels_last at batch 256: device busy above 90%
timed resnet timeout 180 $E resnet50 --batch-size 256 --precision bf16 --memory-format channels_last --max-time 5
timed resnet_fp16 timeout 180 $E resnet50 --batch-size 256 --precisions fp16 --memory-formats channels_last --max-time 5
# profiling adds no time to the reported figure: without and with, alternating (one sweep each)
R="python3 -m accelbench run seed-cnn --devices cuda --modes train --batch-sizes 64 --db $DB --quiet"
for i in 1 2 3; do timed plain_$i timeout 90 $R; timed profiled_$i timeout 90 $R --profile; done
python3 -m accelbench results --db $DB --json > $W/results.json; save
