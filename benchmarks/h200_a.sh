# GPU batch A (issue 2 and 3 figures): calibration, the seed benchmark against seed 000's loop
# verbatim, resnet50 bf16 channels_last, and a first cross-process harness comparison.
# Run on the device machine from the repository root: bash benchmarks/h200_a.sh (writes $OUT/out_a.tgz)
# Note: it ran with the harness_check.py of that day (cross-process: a separate reference
# process against `accelbench run` workers); the script has since become the in-process,
# interleaved check used in batches B and C.
export PYTHONPATH=src PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W; DB=$W/h200.db
save() { tar czf $OUT/out_a.tgz -C /tmp w; }
step() { echo "=== $*"; "$@"; save; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv
step sh -c "python3 -m accelbench calibrate --devices cuda --db $DB | tee $W/calibrate.txt"
step sh -c "python3 -m accelbench run seed-cnn --devices cuda --blocks 100 --db $DB --json --quiet > $W/seed.json"
step sh -c "python3 benchmarks/seed_reference.py --epochs 100 --compare $W/seed.json | tee $W/seed_ref.json"
step sh -c "python3 -m accelbench run resnet50 --devices cuda --precisions bf16 --memory-formats channels_last --batch-sizes 256 --blocks 50 --db $DB --json --quiet > $W/r50.json"
step sh -c "python3 -m accelbench run resnet50 --devices cuda --modes infer --precisions bf16 --memory-formats channels_last --batch-sizes 32 --blocks 200 --db $DB --json --quiet > $W/r50i.json"
step sh -c "python3 -m accelbench results --db $DB | tee $W/results.txt"
