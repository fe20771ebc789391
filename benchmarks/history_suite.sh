# Runs of one configuration over minutes, into one store, for the history's prediction
# interval and gate (issue 34). Each `accelbench run` is one run; the store keeps them all.
#   bash benchmarks/history_suite.sh history   8 runs each of seed-cnn train (launch-bound) and
#                                               resnet50 infer bf16 channels_last b32, alternating
#   bash benchmarks/history_suite.sh aa        resnet50 train bf16 channels_last b256
#                                               (compute-bound): clean runs alternating with runs
#                                               carrying a planted 10% slowdown (planted_slowdown.py)
# Writes $OUT/<suite>.db (the clean runs), $OUT/<suite>_planted.db and $OUT/<suite>_log.txt, saved
# after every run so a call cut short keeps what it measured. Judge them with
# benchmarks/history_check.py.
set -u
suite=${1:?history or aa}
export PYTHONPATH=src PYTHONUNBUFFERED=1 COLUMNS=200
AB="python3 -m accelbench"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
W=/tmp/hist; mkdir -p $W
log=$OUT/${suite}_log.txt
deadline=$(( $(date +%s) + ${BUDGET_S:-560} ))
save() { cp $W/*.db "$OUT/" 2>/dev/null; }
timed() {  # name, command...: one run, its wall time in the log
  local name=$1; shift; local t0=$(date +%s)
  "$@" > $W/$name.txt 2>&1; local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - t0 )) s at $(date -u +%H:%M:%S)" >> "$log"
  [ $rc -eq 0 ] || tail -5 $W/$name.txt >> "$log"; save
}
left() { [ $(( deadline - $(date +%s) )) -gt ${1:-60} ]; }
python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__)" > "$log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv >> "$log"
case $suite in
history)
  for i in 1 2 3 4 5 6 7 8; do
    left 70 || break
    timed seed$i $AB run seed-cnn --devices cuda --quiet --db $W/history.db
    left 50 || break
    timed rn$i $AB run resnet50 --devices cuda --modes infer --precisions bf16 \
      --memory-formats channels_last --batch-sizes 32 --max-time 6 --no-latency --quiet \
      --db $W/history.db
    sleep ${GAP_S:-5}
  done ;;
aa)
  rn="run resnet50 --devices cuda --modes train --precisions bf16 --memory-formats channels_last
      --batch-sizes 256 --rounds 2 --max-time 1 --no-verdict --no-latency --quiet"
  for i in $(seq 1 20); do
    left 30 || break
    timed clean$i $AB $rn --db $W/aa.db
    left 30 || break
    timed planted$i env ACCELBENCH_LEVERS=benchmarks/planted_slowdown.py \
      ACCELBENCH_PLANTED_SLOWDOWN=0.1 $AB $rn --db $W/aa_planted.db
  done ;;
*) echo "unknown suite $suite: history or aa" >&2; exit 2 ;;
esac
save
