# GPU batch J (issue 12, the code as it landed): explain's output for the README.
#   bash benchmarks/h200_j.sh   (writes $OUT/out_j.tgz)
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/wj; mkdir -p $W; export DB=$W/h200.db
save() { tar czf $OUT/out_j.tgz -C /tmp wj; }
timed() { local name=$1; shift; local t0=$(date +%s); "$@" > $W/$name.txt 2>$W/$name.err
  echo "$name: $(( $(date +%s) - t0 )) s" | tee -a $W/walls.txt; save; }
E="python3 -m accelbench explain seed-cnn --device cuda --batch-size 64 --db $DB --quiet"
timed seed_eager timeout 120 $E
timed seed_graph timeout 120 $E --cuda-graphs on
python3 -m accelbench results --db $DB --json > $W/results.json; save
