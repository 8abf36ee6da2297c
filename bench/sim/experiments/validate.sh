# shellcheck shell=bash
# validate [--overlap DIR]  the emulated cluster's runs again on its simulated twin (flat-1g, flat-1g-2pn), same
#                  methods, sizes and ranks: 2 hosts (plots/results/algorithms-2hosts), 4 hosts
#                  (plots/results/algorithms, and plots/results/cluster for the parameter server), 2 x 2 ranks
#                  (hier), and the 2-host overlap steps of DIR (default plots/results/overlap-2hosts-avx2: computation
#                  is timed on this CPU, so the emulated steps must come from the same kind);
#                  validation.md: the error table beside the cost model's

results="$GRADSYNC_ROOT/plots/results"
overlap="$results/overlap-2hosts-avx2"
if [ "${1:-}" = --overlap ]; then
  need_value "$1" $#
  overlap="$2"
fi
for f in algorithms-2hosts/fit.csv algorithms/fit.csv algorithms/hosts.csv algorithms/tuning.txt \
  cluster/allreduce_default.csv; do
  [ -f "$results/$f" ] || die "validate: the emulated run plots/results/$f is missing"
done
[ -f "$overlap/overlap_steps.csv" ] || die "validate: no emulated overlap steps $overlap/overlap_steps.csv"
[ -x "$SMPI_BUILD/bin/bench_sync" ] || die "validate needs bench_sync: run scripts/simulate.sh build --all first"
sweep=(--iters 1 --reps 1 --warmup 1 --segment-bytes whole)
# The emulated runs' MPI_Allreduce is Open MPI 4.1's: SMPI's copy of its selection logic stands in for it.
export SELECTOR=ompi
smpi_run flat-1g 2 "$out/hosts2.log" bench_allreduce --methods ring,rd,rhd,mpi --min-bytes 4 --max-bytes 64M \
  --step-factor 4 "${sweep[@]}" --csv "$out/hosts2.csv"
smpi_run flat-1g 4 "$out/hosts4.log" bench_allreduce --methods ring,rd,rhd,mpi,ps,ps-sharded --min-bytes 4 \
  --max-bytes 64M --step-factor 4 "${sweep[@]}" --csv "$out/hosts4.csv"
GRADSYNC_TUNING="$results/algorithms/tuning.txt" smpi_run flat-1g-2pn 4 "$out/hosts2x2.log" bench_allreduce \
  --methods ring,hier,rhd,auto,mpi --min-bytes 1M --max-bytes 64M --step-factor 4 "${sweep[@]}" \
  --csv "$out/hosts2x2.csv"
# bench_overlap.sh's steps without the communication thread (SMPI has none): 3 blocks of 4 steps per method.
overlap_methods=ring,ring+buckets,ring+pipe,mpi,mpi+pipe
rm -f "$out/overlap.csv"  # --csv appends
smpi_run flat-1g 2 "$out/overlap.log" bench_sync --methods "$overlap_methods" --hidden 1024,1024 --batch 1024 \
  --steps 60 --block 4 --settle 1 --data "$GRADSYNC_ROOT/data/mnist" --csv "$out/overlap.csv"
python3 "$SIM_DIR/validate.py" --out "$out" \
  "2 hosts:$results/algorithms-2hosts/fit.csv:$out/hosts2.csv:$results/algorithms-2hosts/model_fit/model_vs_measured.csv" \
  "4 hosts [ring,rd,rhd,mpi]:$results/algorithms/fit.csv:$out/hosts4.csv:$results/algorithms/model_fit/model_vs_measured.csv" \
  "4 hosts [ps,ps-sharded2]:$results/cluster/allreduce_default.csv:$out/hosts4.csv:$results/cluster/model_vs_measured.csv" \
  "2 x 2:$results/algorithms/hosts.csv:$out/hosts2x2.csv:$results/algorithms/model_hosts/model_vs_measured.csv" \
  --steps "2 hosts:$overlap/overlap_steps.csv:$out/overlap.csv"
