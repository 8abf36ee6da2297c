#!/usr/bin/env bash
# The simulation build under ctest (label sim): tests/CMakeLists.txt runs one CASE per entry.
#   build       scripts/simulate.sh build: installs SimGrid if missing, builds bench_allreduce and pingpong with
#               smpicxx into build-smpi/ (the fixture the other cases need)
#   exact       every method's sums exact at 6 and 8 simulated ranks (simulate.sh allreduce-check)
#   alpha-beta  the ring's simulated time within 10% of its closed form: fails when nothing is really simulated
#   shared      bench_allreduce --shared-buffers (every rank's buffer and scratch one shared block) times rd, rhd
#               and the ring exactly as private buffers do, computation off, and says it checked nothing
#   defaults    64 simulated ranks of rd and the ring at 8 B and 16 MiB with the default options finish within two
#               minutes (whole messages, one warm-up and one timed call per row: a simulation build's defaults)
#   user-files  run --platform FILE --hostfile FILE: a platform and host file of the user's own, outside bench/sim
#               (a copy of flat-1g with another name, two ranks a host by HOST:N), runs and writes its rows
#   bad-input   an unknown platform, a platform with fewer hosts than ranks, a bad rank count, an unknown
#               experiment, a missing tuning file (auto's, and scale's --tuning), and --platform / --hostfile
#               naming a missing file, a file that is no platform, or a host the platform lacks: each one clear
#               error that names the file, a non-zero exit, no hang
# Exits 77 (ctest: skipped) where SimGrid cannot be installed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SIM="$ROOT/scripts/simulate.sh"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# expect_error WHAT PATTERN COMMAND...: COMMAND must fail within a minute, saying PATTERN.
expect_error() {
  local what="$1" pattern="$2" status=0
  shift 2
  timeout 60 "$@" >"$out/log" 2>&1 || status=$?
  if [ "$status" = 0 ] || [ "$status" = 124 ] || ! grep -q -- "$pattern" "$out/log"; then
    cat "$out/log"
    echo "FAIL ($what): exit $status, expected a failure saying '$pattern'"
    exit 1
  fi
  echo "ok ($what): $(grep -m1 -- "$pattern" "$out/log")"
}

# The platforms are generated (build-smpi/platforms, not in git): simulate.sh writes them when missing and names the folder.
platforms="$(bash "$SIM" platforms)"
[ -f "$platforms/flat-1g.xml" ] || { echo "FAIL: scripts/simulate.sh platforms wrote no $platforms/flat-1g.xml"; exit 1; }
[ "${1:-}" = build ] || command -v smpirun >/dev/null || { echo "skipped: SimGrid's smpirun is not installed"; exit 77; }
case "${1:-}" in
  build) GRADSYNC_JOBS="${GRADSYNC_JOBS:-$(nproc)}" bash "$SIM" build || { command -v smpirun >/dev/null || exit 77; exit 1; } ;;
  exact) bash "$SIM" allreduce-check --out "$out" 6 8 ;;
  defaults)
    # No --iters, --reps, --warmup or --segment-bytes: what a new user types.
    timeout 120 bash "$SIM" run --out "$out" flat-1g 64 bench_allreduce --methods ring,rd --min-bytes 8 --max-bytes 16M \
      --step-factor 2097152 --csv "$out/defaults.csv" || { echo "FAIL: exit $? (124: out of time)"; exit 1; }
    grep -q '^# bench_allreduce: 64 ranks, .*median of 1 interleaved blocks' "$out/bench_allreduce-flat-1g-np64.log" ||
      { echo "FAIL: a simulation build's default is not one timed block per row"; exit 1; }
    echo "ok: $(($(wc -l <"$out/defaults.csv") - 1)) rows at 64 simulated ranks" ;;
  alpha-beta) bash "$SIM" alpha-beta --out "$out" 8 ;;
  shared)
    export SMPI_CFG="--cfg=smpi/simulate-computation:no"
    flags=(--methods rd,rhd,ring --min-bytes 1M --max-bytes 1M --iters 1 --reps 1 --warmup 1 --segment-bytes whole)
    bash "$SIM" run --out "$out/private" flat-1g 8 bench_allreduce "${flags[@]}" --csv "$out/private.csv"
    bash "$SIM" run --out "$out/shared" flat-1g 8 bench_allreduce "${flags[@]}" --shared-buffers \
      --csv "$out/shared.csv"
    grep -q '^# sums not checked: --shared-buffers' "$out/shared/"*.log || { echo "FAIL: no 'sums not checked'"; exit 1; }
    # method,np,bytes,count,chunk_bytes,time_us,...,wrong: the same times; wrong 0 checked, -1 not.
    diff <(cut -d, -f1-6 "$out/private.csv") <(cut -d, -f1-6 "$out/shared.csv") ||
      { echo "FAIL: shared buffers changed the simulated times"; exit 1; }
    awk -F, 'NR > 1 && $9 != 0 { exit 1 }' "$out/private.csv" || { echo "FAIL: private sums wrong"; exit 1; }
    awk -F, 'NR > 1 && $9 != -1 { exit 1 }' "$out/shared.csv" || { echo "FAIL: shared sums claimed checked"; exit 1; }
    echo "ok: $(($(wc -l <"$out/shared.csv") - 1)) rows, the same simulated times shared and private" ;;
  user-files)
    mkdir -p "$out/mine"
    cp "$platforms/flat-1g.xml" "$out/mine/my-cluster.xml"
    printf 'node-0:2\nnode-1:2\n' >"$out/mine/my-hosts.txt"
    (cd "$out/mine" && bash "$SIM" run --out "$out" --platform my-cluster.xml --hostfile my-hosts.txt 4 bench_allreduce \
      --methods ring,rd --min-bytes 1M --max-bytes 1M --csv "$out/mine.csv")
    rows=$(($(wc -l <"$out/mine.csv") - 1))
    [ "$rows" -eq 2 ] || { echo "FAIL: $rows rows from the user's platform, expected 2"; exit 1; }
    grep -q '^bench_allreduce: 4 ranks\|^# bench_allreduce: 4 ranks' "$out/bench_allreduce-my-cluster-np4.log" ||
      { echo "FAIL: no log named after the user's platform"; exit 1; }
    echo "ok: $rows rows on 4 simulated ranks of a platform and host file of the user's own" ;;
  bad-input)
    printf 'node-0\n' >"$out/one-host.txt"
    printf 'nowhere\n' >"$out/unknown-host.txt"
    expect_error "missing --platform file" "--platform $out/none.xml: no such file" \
      bash "$SIM" run --platform "$out/none.xml" --hostfile "$out/one-host.txt" 1 bench_allreduce
    expect_error "missing --hostfile" "--hostfile $out/none.txt: no such file" \
      bash "$SIM" run --platform "$platforms/flat-1g.xml" --hostfile "$out/none.txt" 1 bench_allreduce
    expect_error "a --platform that is no platform" "--platform $out/one-host.txt: not a SimGrid platform file" \
      bash "$SIM" run --platform "$out/one-host.txt" --hostfile "$out/one-host.txt" 1 bench_allreduce
    cp "$platforms/flat-1g.xml" "$out/lonely.xml"
    expect_error "--platform without a host file" "--platform $out/lonely.xml: no host file beside it" \
      bash "$SIM" run --platform "$out/lonely.xml" 1 bench_allreduce
    expect_error "too few hosts in --hostfile" "holds 1 ranks, asked for 2 (host file $out/one-host.txt)" \
      bash "$SIM" run --platform "$out/lonely.xml" --hostfile "$out/one-host.txt" 2 bench_allreduce
    expect_error "a host the platform lacks" "host file $out/unknown-host.txt names host 'nowhere'" \
      bash "$SIM" run --out "$out" --platform "$out/lonely.xml" --hostfile "$out/unknown-host.txt" 1 bench_allreduce \
      --methods ring --min-bytes 4 --max-bytes 4 --iters 1 --reps 1
    expect_error "unknown platform" "no platform 'flat-9g'" bash "$SIM" run flat-9g 4 bench_allreduce
    expect_error "too few hosts" "platform 'flat-1g-2pn' holds 1024 ranks, asked for 1025" \
      bash "$SIM" run flat-1g-2pn 1025 bench_allreduce
    expect_error "bad rank count" "a positive whole number, got 'four'" bash "$SIM" run flat-1g four bench_allreduce
    expect_error "unknown experiment" "unknown experiment 'sweep'" bash "$SIM" sweep
    expect_error "missing tuning file" "tuning file $out/none.txt: cannot be read" \
      env GRADSYNC_TUNING="$out/none.txt" bash "$SIM" run --out "$out" flat-1g 4 bench_allreduce --methods auto \
      --min-bytes 4 --max-bytes 4 --iters 1 --reps 1 --warmup 1
    expect_error "missing tuning file (scale)" "scale: --tuning $out/none.txt: no such file" \
      bash "$SIM" scale --out "$out" --tuning "$out/none.txt" ;;
  *) echo "usage: tests/sim/sim_test.sh build|exact|alpha-beta|shared|defaults|user-files|bad-input" >&2; exit 2 ;;
esac
