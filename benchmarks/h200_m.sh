# GPU batch M (issue 25): the same `accelbench run` started again and again, each its own
# command and database, now that a configuration is measured in several processes; the main
# job's verdict on seed-cnn; and optimize repeated.
#   bash benchmarks/h200_m.sh repeat    (writes $OUT/out_m_repeat.tgz)
#   bash benchmarks/h200_m.sh again     (the main job twice, seed-cnn four times, one optimize:
#                                        after the probe alternated with the configuration)
#   bash benchmarks/h200_m.sh optimize  (writes $OUT/out_m_optimize.tgz)
# Then, here: python3 benchmarks/repeat_check.py <the four databases of one configuration>
export PYTHONPATH=src PYTHONUNBUFFERED=1
part=$1; W=/tmp/wm_$part; mkdir -p $W
save() { tar czf $OUT/out_m_$part.tgz -C /tmp wm_$part; }
timed() { local name=$1; shift; local t0=$(date +%s); "$@" > $W/$name.txt 2>$W/$name.err
  echo "$name: $(( $(date +%s) - t0 )) s" | tee -a $W/walls.txt; save; }
AB="python3 -m accelbench"
SEED="run seed-cnn --devices cuda --precisions fp32 --batch-sizes 64 --max-time 4 --quiet"
R50I="run resnet50 --devices cuda --modes infer --precisions bf16 --memory-formats channels_last"
R50I="$R50I --batch-sizes 32 --no-latency --quiet"
R50T="run resnet50 --devices cuda --precisions bf16 --memory-formats channels_last"
R50T="$R50T --batch-sizes 256 --quiet"
case $part in
repeat)
  python3 -c "import torch, sys; print(sys.version, torch.__version__)" > $W/versions.txt
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv >> $W/versions.txt
  for i in 1 2 3 4; do timed seed_$i timeout 90 $AB $SEED --db $W/seed_$i.db; done
  for i in 1 2 3 4; do timed r50i_$i timeout 120 $AB $R50I --db $W/r50i_$i.db; done
  for i in 1 2; do timed r50t_$i timeout 120 $AB $R50T --db $W/r50t_$i.db; done
  timed main timeout 150 $AB run --db $W/main.db
  for f in $W/*.db; do $AB results --db $f --json > ${f%.db}.json; done; save ;;
again)
  for i in 1 2; do timed main_$i timeout 120 $AB run --db $W/main_$i.db; done
  for i in 1 2 3 4; do timed seed_$i timeout 90 $AB $SEED --db $W/seed_$i.db; done
  timed opt_seed_1 timeout 200 $AB optimize seed-cnn --device cuda --mode train --db $W/os_1.db
  for f in $W/*.db; do $AB results --db $f --json > ${f%.db}.json; done; save ;;
optimize)
  for i in 2 3; do
    timed opt_seed_$i timeout 170 $AB optimize seed-cnn --device cuda --mode train --db $W/os_$i.db
  done
  for f in $W/*.db; do $AB results --db $f --json > ${f%.db}.json; done; save ;;
esac
