# shellcheck shell=bash
# train-scale [--nps "2 4 8 16 32 64"] [--platforms "flat-1g fattree-10g-1pn"] [--syncs "ring mpi auto ps ps-sharded"]
#             [--modes "blocking buckets pipe"] [--epochs 3]
#                  the course lab's table at scale: MLP-128, batch 32 per worker, constant total work
#                  (--iterations-per-epoch auto), every sync blocking, bucketed (+buckets) and pipelined (+pipe)
#                  where train takes it so (gossip and local SGD run blocking only, ps without buckets); a sync is
#                  a train sync spec (train --spec: ps has 1 server, gossip+topology=exp1, ring+average=8, ...) or
#                  ps-sharded, this experiment's own: ps with p/8 servers (at least 2); a run is labelled with
#                  train's name of the sync and the mode (ring-blocking, ps-bsp-pipe, ps-sharded-buckets);
#                  build/bin/train answers for the specs; train.md: speedup over serial, time to 97% test
#                  accuracy. mpi runs blocking only: SMPI's MPI_Iallreduce sends every buffer to every rank (Open
#                  MPI's libnbc does not), which says nothing about overlap and takes hours of simulation at p = 64.
#                  A run whose epochs are all in the results folder is not run again (an interrupted sweep resumes).

nps="2 4 8 16 32 64"
platforms="flat-1g fattree-10g-1pn"
syncs="ring mpi auto ps ps-sharded"
modes="blocking buckets pipe"
epochs=3
parse_flags train-scale "--nps nps" "--platforms platforms" "--syncs syncs" "--modes modes" \
  "--epochs epochs uint 1" -- "$@"
[ -x "$SMPI_BUILD/bin/train" ] || die "train-scale needs train: run scripts/simulate.sh build --all first"
for p in $platforms; do [ -f "$PLATFORM_DIR/$p.xml" ] || die "train-scale: no platform '$p' ($(platforms))"; done
data="$GRADSYNC_ROOT/data/mnist"
common=(--model mlp --hidden 128 --batch 32 --iterations-per-epoch auto --epochs "$epochs" --data "$data" --quiet
  --timeout 0)
# run_one PLATFORM NP LABEL TRAIN_ARGS...: one training run, its rows in runs.csv and epochs-LABEL-npNP.csv.
run_one() {
  local platform="$1" np="$2" label="$3"
  shift 3
  local tag="$platform/$label-np$np"
  mkdir -p "$out/$platform"
  if [ -f "$out/$tag-epochs.csv" ] && [ "$(wc -l <"$out/$tag-epochs.csv")" -gt "$epochs" ]; then
    say "train-scale: $tag done before"
    return
  fi
  rm -f "$out/$tag-epochs.csv"
  # SMPI's copy of Open MPI's MPI_Reduce fails on a single rank (SimGrid 3.32): the serial run keeps SMPI's own.
  local selector=ompi
  [ "$np" -gt 1 ] || selector=""
  SELECTOR="$selector" smpi_run "$platform" "$np" "$out/$tag.log" train "${common[@]}" "$@" \
    --epoch-csv "$out/$tag-epochs.csv"
}
for mode in $modes; do
  [[ " blocking buckets pipe " == *" $mode "* ]] || die "train-scale: unknown mode '$mode' (blocking, buckets, pipe)"
done
# The simulated train runs only under smpirun: this build's answers for the specs (the same sources). A sync's label
# is train's name of it; a typo in --syncs ends the experiment here.
need_bins train
declare -A label_of
for sync in $syncs; do
  if [ "$sync" = ps-sharded ]; then label_of[$sync]=ps-sharded; continue; fi
  spec_run "$sync" --syncs
  label_of[$sync]="$run_name"
done
# mode_spec SYNC MODE NP: sets spec to SYNC's spec in MODE on NP ranks, or returns 1 where train refuses it (the mode
# does not apply to the sync, or NP ranks are too few), saying so once per sync and mode.
declare -A refused
mode_spec() {
  spec="$1"
  [ "$1" != ps-sharded ] || spec="ps+servers=$(($3 / 8 > 2 ? $3 / 8 : 2))"
  [ "$2" = blocking ] || spec+="+$2"
  local answer
  if answer="$("$BIN/train" --spec "$spec" --print-run 2>&1)" && [ "$3" -ge "${answer##*$'\t'}" ]; then return 0; fi
  [[ $answer == *$'\t'* ]] && return 1  # accepted, on more ranks than NP
  [ -n "${refused[$1/$2]:-}" ] || say "train-scale: no $1 $2 runs: ${answer#train: error: }"
  refused[$1/$2]=1
  return 1
}
for platform in $platforms; do
  run_one "$platform" 1 serial --spec serial
  for np in $nps; do
    for sync in $syncs; do
      for mode in $modes; do
        [ "$mode" = blocking ] || [ "$sync" != mpi ] || continue  # see above: SMPI's MPI_Iallreduce
        mode_spec "$sync" "$mode" "$np" || continue
        run_one "$platform" "$np" "${label_of[$sync]}-$mode" --spec "$spec"
      done
    done
  done
  python3 "$SIM_DIR/train_report.py" --dir "$out/$platform" --platform "$platform" --target 0.97
done
