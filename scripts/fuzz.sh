#!/usr/bin/env bash
# Fuzzes the two parsers that read files a user hands us: the IDX reader and the checkpoint reader
# (tests/fuzz/). Builds the libFuzzer targets with clang, ASan and UBSan into build-fuzz, seeds each corpus,
# runs each target for a bounded time and exits non-zero if either found a crash, a sanitizer report, a
# timeout or an out-of-memory input. Usage: scripts/fuzz.sh [--seconds N]   (per target, default 60)
# The corpora in build-fuzz/fuzz/corpus grow across runs, so a later run starts where the last one stopped;
# reproducers land in build-fuzz/fuzz/findings (re-run one with: build-fuzz/bin/<target> <file>).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

seconds=60
while [ "$#" -gt 0 ]; do
  case "$1" in
    --seconds)
      [ "$#" -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "fuzz.sh: --seconds needs a positive whole number"
      seconds="$2"
      shift 2 ;;
    *) die "fuzz.sh: unknown option '$1' (use --seconds N)" ;;
  esac
done

fuzz_dir="${FUZZ_BUILD_DIR:-$GRADSYNC_ROOT/build-fuzz}"
work="$fuzz_dir/fuzz"
targets=(fuzz_idx_reader fuzz_checkpoint)
# Largest input per target. IDX seeds are up to ~1.6 KB and real-file prefixes 4 KiB; a gzip input can inflate
# ~1000x, so 16 KiB keeps one input's decompressed size (and the run's memory) bounded. Checkpoint seeds are
# a few hundred bytes; 4 KiB leaves room for long configs and payloads without slowing each execution.
declare -A max_len=([fuzz_idx_reader]=16384 [fuzz_checkpoint]=4096)
# Well above a clean run's peak RSS (mostly ASan's quarantine); an input that pushes past this, or a single
# allocation above it (libFuzzer's -malloc_limit_mb defaults to the same value), is an over-allocation finding.
rss_limit_mb=2048
# Seconds one input may take before it counts as a hang.
input_timeout=10
mnist_prefix_bytes=4096

# The rest of the project's packages are needed too: CMake configures the whole tree before building targets.
"$GRADSYNC_ROOT/scripts/setup.sh" --no-build
install_missing "clang with libFuzzer and the sanitizer runtimes; llvm-symbolizer for stacks" \
  clang libclang-rt-14-dev llvm

say "configuring $fuzz_dir with clang (GRADSYNC_FUZZ=ON)"
cmake -S "$GRADSYNC_ROOT" -B "$fuzz_dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DGRADSYNC_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
say "building ${targets[*]} make_fuzz_seeds (one job)"
if ! cmake --build "$fuzz_dir" -j1 --target "${targets[@]}" make_fuzz_seeds >"$fuzz_dir/fuzz-build.log" 2>&1; then
  grep -E "error|Error" "$fuzz_dir/fuzz-build.log" | head -40 >&2
  die "fuzz build failed (full log: $fuzz_dir/fuzz-build.log)"
fi

# Seeds are rebuilt every run (they follow the current writer); the corpora are kept.
rm -rf "$work/seeds"
mkdir -p "$work/seeds/fuzz_idx_reader" "$work/seeds/fuzz_checkpoint" "$work/findings" "$work/logs"
"$fuzz_dir/bin/make_fuzz_seeds" "$work/seeds/fuzz_idx_reader" "$work/seeds/fuzz_checkpoint"
# Prefixes of the real files: real headers and pixel statistics, each cut short (the reader must say "truncated").
for f in "$GRADSYNC_ROOT"/data/mnist/*-idx?-ubyte; do
  if [ -f "$f" ]; then head -c "$mnist_prefix_bytes" "$f" >"$work/seeds/fuzz_idx_reader/prefix-$(basename "$f")"; fi
done

symbolizer="$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)"
[ -n "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# fuzz_idx_reader writes each input to a per-process file under $TMPDIR. On tmpfs that write costs no disk I/O,
# which dominates an execution on disk, so use /dev/shm when there is one.
TMPDIR="$(mktemp -d /dev/shm/gradsync-fuzz.XXXXXX 2>/dev/null || mktemp -d "${TMPDIR:-/tmp}/gradsync-fuzz.XXXXXX")"
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

failed=0
summary=()
for t in "${targets[@]}"; do
  corpus="$work/corpus/$t"
  mkdir -p "$corpus"
  rm -f "$work/findings/$t-"*
  log="$work/logs/$t.log"
  say "fuzzing $t for ${seconds} s (corpus $corpus, log $log)"
  set +e
  "$fuzz_dir/bin/$t" "$corpus" "$work/seeds/$t" -max_total_time="$seconds" -rss_limit_mb="$rss_limit_mb" \
    -max_len="${max_len[$t]}" -timeout="$input_timeout" -artifact_prefix="$work/findings/$t-" \
    -print_final_stats=1 >"$log" 2>&1
  status=$?
  set -e
  runs="$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)"
  took="$(sed -nE 's/^Done [0-9]+ runs in ([0-9]+) second.*/\1/p' "$log" | tail -1)"
  rate="$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$log" | tail -1)"
  inputs="$(find "$corpus" -type f | wc -l)"
  shopt -s nullglob
  artifacts=("$work/findings/$t-"*)
  shopt -u nullglob
  if [ "$status" -ne 0 ] || [ "${#artifacts[@]}" -gt 0 ]; then
    failed=1
    summary+=("$t: FOUND A PROBLEM after ${runs:-?} executions (libFuzzer exit $status); reproducer(s): ${artifacts[*]:-none}")
    # The report: libFuzzer's own line, the sanitizer's, and the stack under them.
    grep -E -A25 "==ERROR|runtime error:|deadly signal|out-of-memory|timeout after|uncaught exception" "$log" | head -60 >&2 || true
  else
    summary+=("$t: ${runs:-?} executions in ${took:-$seconds} s (${rate:-?}/s), corpus $inputs inputs, nothing found")
  fi
done

echo
echo "==== fuzz summary (${seconds} s per target, ASan + UBSan, -rss_limit_mb=$rss_limit_mb) ===="
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ] || die "fuzzing found a problem: see the reproducer(s) and $work/logs"
