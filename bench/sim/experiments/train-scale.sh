# shellcheck shell=bash
# train-scale [--nps "2 4 8 16 32 64"] [--platforms "flat-1g fattree-10g-1pn"] [--syncs "ring mpi auto ps ps-sharded"]
#             [--modes "blocking buckets pipe"] [--epochs 3]
#                  the course lab's table at scale: MLP-128, batch 32 per worker, constant total work
#                  (--iterations-per-epoch auto), every sync blocking, bucketed (allreduce methods) and pipelined;
#                  ps has 1 server, ps-sharded p/8 (at least 2); any other sync is a scripts/common.sh method name
#                  (gossip-TOPOLOGY[-async], ring-avgH, ...), run blocking; train.md: speedup over serial, time to 97% test
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
for p in $platforms; do [ -f "$SIM_DIR/$p.xml" ] || die "train-scale: no platform '$p' ($(platforms))"; done
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
for platform in $platforms; do
  run_one "$platform" 1 serial --sync serial
  for np in $nps; do
    for sync in $syncs; do
      args=(--sync "$sync")
      case "$sync" in
        ps) args=(--sync ps --servers 1) ;;
        ps-sharded) args=(--sync ps --servers $((np / 8 > 2 ? np / 8 : 2))) ;;
        *) need_method "$sync" --syncs; args=("${mflags[@]}") ;;  # the allreduces, gossip, local SGD
      esac
      # A parameter server needs a worker besides its servers.
      [[ "$sync" != ps* ]] || [ "$np" -gt "${args[3]}" ] || continue
      for mode in $modes; do
        # gossip and local SGD have no overlap modes of their own
        [[ "$sync" != gossip* && "$sync" != *-avg* ]] || [ "$mode" = blocking ] || continue
        case "$mode" in
          blocking) extra=() ;;
          buckets) [[ "$sync" != ps* && "$sync" != mpi ]] || continue; extra=(--buckets) ;;
          pipe) [ "$sync" != mpi ] || continue; extra=(--pipeline 1) ;;
          *) die "train-scale: unknown mode '$mode' (blocking, buckets, pipe)" ;;
        esac
        run_one "$platform" "$np" "$sync-$mode" "${args[@]}" "${extra[@]+"${extra[@]}"}"
      done
    done
  done
  python3 "$SIM_DIR/train_report.py" --dir "$out/$platform" --platform "$platform" --target 0.97
done
