# CPU batch M (issue 25), on this 2-core machine, otherwise idle:
#   bash benchmarks/cpu_m.sh main OLD_TREE   the README's main job, the previous release (a
#                                            checkout at OLD_TREE) and this one alternating
#   bash benchmarks/cpu_m.sh share           --max-time 10: timed seconds against wall time
#   bash benchmarks/cpu_m.sh aa              the A/A check, 20 sweeps of the same work twice
set -u
part=$1; W=/tmp/cm_$part; mkdir -p $W
case $part in
main)
  old=$2
  for i in 1 2; do
    for which in old new; do
      if [ $which = old ]; then tree=$old; else tree=$PWD; fi
      rm -f $W/${which}_$i.db
      t0=$(date +%s.%N)
      (cd $W && PYTHONPATH=$tree/src python3 -m accelbench run --db $W/${which}_$i.db --quiet \
        > $W/${which}_$i.txt 2>&1)
      echo "$which $i: $(echo "$(date +%s.%N) - $t0" | bc) s" | tee -a $W/walls.txt
    done
  done ;;
share)
  t0=$(date +%s.%N)
  accelbench run seed-cnn --devices cpu --modes train --max-time 10 --db $W/share.db --quiet \
    > $W/share.txt 2>&1
  echo "command: $(echo "$(date +%s.%N) - $t0" | bc) s" | tee $W/walls.txt
  accelbench results --db $W/share.db --json > $W/share.json ;;
aa)
  for i in $(seq 1 20); do
    accelbench run benchmarks/aa_models.py:first benchmarks/aa_models.py:second \
      --devices cpu --max-time 6 --no-verdict --db $W/aa.db --quiet > /dev/null 2>&1
  done
  accelbench compare --by workload --json --db $W/aa.db > $W/aa.json ;;
esac
