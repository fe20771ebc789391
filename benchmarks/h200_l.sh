# GPU batch L (issue 13): llama-1b generation on the H200, accelbench between two runs of a
# hand-written loop (benchmarks/llm_reference.py), then the static KV cache with torch.compile.
#   bash benchmarks/h200_l.sh eager     (writes $OUT/out_l_eager.tgz)
#   bash benchmarks/h200_l.sh compiled  (writes $OUT/out_l_compiled.tgz)
#   bash benchmarks/h200_l.sh optimize  (writes $OUT/out_l_optimize.tgz)
#   bash benchmarks/h200_l.sh short     (compiled and optimize trimmed to one 10-minute call)
#   bash benchmarks/h200_l.sh gap       (benchmarks/generate_gap.py, then accelbench's own run)
#   bash benchmarks/h200_l.sh gap2      (run's 12-16%: its pipeline in-process, its build, fork server or spawn)
#   bash benchmarks/h200_l.sh gap3      (the forked worker, with one thing left out at a time)
#   bash benchmarks/h200_l.sh gap4      (a worker leading a process group, setpgid, against accelbench's session)
export PYTHONPATH=src PYTHONUNBUFFERED=1
part=$1; W=/tmp/wl_$part; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_l_$part.tgz -C /tmp wl_$part; }
timed() { local name=$1; shift; local t0=$(date +%s); "$@" > $W/$name.txt 2>$W/$name.err
  echo "$name: $(( $(date +%s) - t0 )) s" | tee -a $W/walls.txt; save; }
GEN="run llama-1b --modes generate --devices cuda --precisions bf16 --prompt-lengths 512 --new-tokens 128 --blocks 10 --db $DB --quiet"
REF="python3 benchmarks/llm_reference.py --prompt 512 --new 128 --runs 10"
case $part in
eager)
  timed ref_a timeout 150 $REF --batches 1,16,64
  timed llama timeout 200 python3 -m accelbench $GEN --batch-sizes 1,16,64
  timed ref_b timeout 150 $REF --batches 1,16,64
  timed ref_async timeout 150 $REF --batches 1,64 --no-sync
  timed smoke timeout 100 python3 -m accelbench run gpt2 --modes generate --devices cuda \
    --kv-cache static --compile reduce-overhead --blocks 3 --db $DB --quiet ;;
compiled)
  timed ref_sc timeout 200 $REF --batches 1,64 --static-compile
  timed ref_sc_async timeout 200 $REF --batches 1 --static-compile --no-sync
  timed llama_sc timeout 260 python3 -m accelbench $GEN --batch-sizes 1,64 --kv-cache static \
    --compile reduce-overhead
  timed llama_attn timeout 100 python3 -m accelbench $GEN --batch-sizes 1 --attention eager ;;
short)
  timed ref_sc timeout 150 $REF --batches 1,64 --runs 5 --static-compile
  timed llama_sc timeout 200 python3 -m accelbench ${GEN/--blocks 10/--blocks 5} --batch-sizes 1,64 \
    --kv-cache static --compile reduce-overhead
  timed optimize timeout 230 python3 -m accelbench optimize llama-1b --mode generate \
    --device cuda --prompt-length 512 --new-tokens 128 --budget 200 --db $DB ;;
gap)
  timed gap timeout 200 python3 benchmarks/generate_gap.py --batches 1,64 --runs 6
  timed llama_sc timeout 120 python3 -m accelbench ${GEN/--blocks 10/--blocks 6} --batch-sizes 1 \
    --kv-cache static --compile reduce-overhead ;;
gap2)
  SC="--batch-sizes 1 --kv-cache static --compile reduce-overhead"
  # run's pipeline in a plain process, and build()'s objects against the reference's
  timed run_gap timeout 200 python3 benchmarks/run_gap.py --batches 1 --runs 6
  # which processes hold a CUDA context while run measures (the CLI parent too?)
  (sleep 45; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv \
    > $W/apps.txt; ps -ef --forest | grep -v grep | grep -A3 accelbench >> $W/apps.txt) &
  timed run_forkserver timeout 110 python3 -m accelbench ${GEN/--blocks 10/--blocks 6} $SC
  timed run_spawn timeout 120 env ACCELBENCH_START=spawn python3 -m accelbench \
    ${GEN/--blocks 10/--blocks 6} $SC --db $W/spawn.db
  python3 -m accelbench results --db $W/spawn.db --json > $W/spawn.json
  timed gap_fork timeout 110 python3 benchmarks/generate_gap.py --batches 1 --runs 6 --fork ;;
gap3)
  timed worker_gap timeout 500 python3 benchmarks/worker_gap.py --out $W as_is no_adopt no_watch \
    gc_freeze spawn
  for v in as_is no_adopt no_watch gc_freeze spawn; do
    python3 -m accelbench results --db $W/$v.db --json > $W/$v.results.json; done ;;
gap4)
  cat /proc/sys/kernel/sched_autogroup_enabled > $W/autogroup.txt
  timed worker_gap timeout 280 python3 benchmarks/worker_gap.py --out $W setpgid as_is setpgid2 as_is2
  for v in setpgid as_is setpgid2 as_is2; do
    python3 -m accelbench results --db $W/$v.db --json > $W/$v.results.json; done
  timed run timeout 150 python3 -m accelbench ${GEN/--blocks 10/--blocks 6} --batch-sizes 1,64 \
    --kv-cache static --compile reduce-overhead
  timed ref timeout 120 $REF --batches 1,64 --runs 6 --static-compile ;;
optimize)
  timed optimize timeout 400 python3 -m accelbench optimize llama-1b --mode generate \
    --device cuda --prompt-length 512 --new-tokens 128 --db $DB ;;  # the default 300 s budget
esac
python3 -m accelbench results --db $DB --json > $W/results.json; save
