#!/usr/bin/env bash
# What leaks (issue 56): build/bin/leak_images for every model of --models, batch size of --batches and wire of
# --wires (what one worker sends: plain, bf16, top-k, sign, PowerSGD, DP-SGD's clipped and noised gradient, secure
# aggregation's masked vector and its sum over P workers, a fedavg update after E local epochs), one CSV row each,
# and the picture people remember: --picture-model's originals at --picture-batch on top, the reconstructions from
# each wire of --picture-wires beneath (leak.png, drawn by bench/leak/leak_picture.gp). Counts images and times
# nothing, so it may run beside other work. masked runs on --np ranks (rank 0's vector attacked), masked-sum:P on P.
# Usage: bench/leak/leak_sweep.sh [--models "softmax mlp 2nn cnn"] [--batches "1 8 32 128"] [--wires "..."]
#          [--np 4] [--seed 1] [--steps 0] [--cnn-psnr 30] [--picture-keep 8] [--picture-model mlp] [--picture-batch 8]
#          [--picture-wires "plain bf16 dp:0.001 dp:0.01 masked masked-sum:4"] [--out DIR]
# DP-SGD's per-example clipping is the dense models' (the CNN refuses it), so the CNN runs every wire but dp:*.
# MNIST is read from $GRADSYNC_DATA (default data/mnist).
# Writes into DIR (default results/leak-DATE): leak.csv (leak_images' rows), pictures/ (PNG: each run's
# originals-over-reconstructions grid, for batches up to --picture-keep), leak.png, logs/. Exit status 1 if a run failed. plots/results/leak is its
# run with the defaults.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/common.sh"

models="softmax mlp 2nn cnn"
batches="1 8 32 128"
wires="plain bf16 topk:0.1 topk:0.01 sign powersgd:4 dp:0.001 dp:0.01 dp:0.1 dp:1 masked masked-sum:4 fedavg:1 fedavg:5"
# The CNN leaks its dense layer's input (64 pooled 7x7 maps), where unrelated images already reach about 20-23 dB
# against each other: a feature vector counts as recovered from 30 dB.
cnn_psnr=30
np=4
seed=1
steps=0
picture_keep=8
picture_model=mlp
picture_batch=8
picture_wires="plain bf16 dp:0.001 dp:0.01 masked masked-sum:4"
out=""
parse_flags leak_sweep.sh \
  "--models models" \
  "--batches batches" \
  "--wires wires" \
  "--np np uint 2" \
  "--seed seed uint 0" \
  "--steps steps uint 0" \
  "--cnn-psnr cnn_psnr" \
  "--picture-keep picture_keep uint 0" \
  "--picture-model picture_model" \
  "--picture-batch picture_batch uint 1" \
  "--picture-wires picture_wires" \
  "--out out" \
  -- "$@"
need_bins leak_images
command -v gnuplot >/dev/null || die "gnuplot is missing (scripts/setup.sh installs gnuplot-nox)"
mpi_setup
driver_results leak leak.csv leak.png
mkdir -p "$out/pictures"
data="${GRADSYNC_DATA:-$GRADSYNC_ROOT/data/mnist}"

failed=0
csv="$out/leak.csv" pictures="$out/pictures"
# png OUT TITLE LABEL=PGM...: the PGM grids stacked top to bottom into OUT (all of one size: leak_images' grids).
png() {
  local target="$1" title="$2" w h skip
  shift 2
  read -r w h < <(sed -n 2p "${1#*=}")  # the header: "P5", "W H", "255"
  skip=$((3 + ${#w} + 1 + ${#h} + 1 + 4))
  # shellcheck disable=SC2154  # logs: driver_results sets it
  gnuplot -e "w=$w; h=$h; skip=$skip; out='$target'; title=\"$title\"; rows='$*'" \
    "$GRADSYNC_ROOT/bench/leak/leak_picture.gp" 2>>"$logs/gnuplot.log" || { say "gnuplot failed: $target"; failed=1; }
}
# run MODEL BATCH WIRE [FLAG...]: one leak_images run, its row appended to $csv, its picture in $pictures as PNG
# (if set and BATCH <= --picture-keep: the PGMs of every run would be 50 MB).
run() {
  local model="$1" batch="$2" wire="$3" ranks=1 name MPIRUN_FLAGS=()
  shift 3
  case "$wire" in masked) ranks="$np" ;; masked-sum:*) ranks="${wire#masked-sum:}" ;; esac
  name="$model-b$batch-${wire//:/}"
  [ "$model" != cnn ] || set -- --psnr "$cnn_psnr" "$@"
  mpirun_flags "$ranks"
  say "$name ($ranks rank(s))"
  # shellcheck disable=SC2154  # logs: driver_results sets it
  if ! run_limited 900 "$logs/$name.log" "$MPIEXEC" -n "$ranks" "${MPIRUN_FLAGS[@]}" "$BIN/leak_images" \
       --model "$model" --batch "$batch" --wire "$wire" --seed "$seed" --steps "$steps" --data "$data" \
       --csv "$csv" --picture "$work/$name.pgm" "$@"; then
    say "failed: $name (see $logs/$name.log)"
    failed=1
  elif [ -n "$pictures" ] && [ "$batch" -le "$picture_keep" ]; then
    png "$pictures/$name.png" "$model, batch $batch" \
      "$wire=$work/$name.pgm"
  fi
  rm -f "$work/$name.pgm"
}

for model in $models; do
  for batch in $batches; do
    for wire in $wires; do
      [ "$model" != cnn ] || [ "${wire%%:*}" != dp ] || continue
      run "$model" "$batch" "$wire"
    done
  done
done

# The picture: the originals, then one strip of best reconstructions per wire, every strip of the same batch.
strips=()
# shellcheck disable=SC2154  # work: driver_results sets it
csv="$work/picture.csv" pictures=""
for wire in $picture_wires; do
  run "$picture_model" "$picture_batch" "$wire" --strip "$work/strip-${wire//:/}.pgm" \
    --originals "$work/originals.pgm" \
    --picture-max "$picture_batch"
  strips+=("$wire=$work/strip-${wire//:/}.pgm")
done
png "$out/leak.png" "$picture_model, batch $picture_batch: originals, and from what one worker sends, each one's best reconstruction" \
  "originals=$work/originals.pgm" "${strips[@]}"
exit "$failed"
