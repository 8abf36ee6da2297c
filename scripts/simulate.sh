#!/usr/bin/env bash
# Runs gradsync's own binaries on simulated clusters with SimGrid's SMPI: every rank is a thread of one smpirun
# process, each computation burst between MPI calls is timed on this CPU and replayed in simulated time, and
# messages cross a simulated network (bench/sim/*.xml, written by bench/sim/make_platforms.py).
# Usage: scripts/simulate.sh EXPERIMENT [ARGS]
#   build            install libsimgrid-dev if missing; configure build-smpi/ with smpicc/smpicxx
#                    (cmake/smpi-toolchain.cmake) and build bench_allreduce and pingpong (--all: bench_sync, train)
#   calibrate        measure this machine's core (bench/sim/host_speed.cpp) into bench/sim/host-speed.txt and
#                    rewrite the platforms with it
#   pingpong         ping-pong on flat-1g: the one-way time and the rate should be the emulated cluster's fit
#                    (alpha 17.8 us, beta 8.64 ns/B; about 1 us more per message with computation simulated)
#   allreduce-check  ring, rd, rhd and mpi at 4 and 8 simulated ranks on flat-1g, 4 B-4 MiB: every row's
#                    wrong count must be 0; prints the simulated time and what the simulation cost
#   run PLATFORM NP PROGRAM [ARGS]   any program of build-smpi/bin under smpirun, e.g.
#                    scripts/simulate.sh run fattree-10g-1pn 64 bench_allreduce --methods rhd --iters 1 --reps 1
# Results and logs: build-smpi/sim/<experiment>/. SMPI_CFG (words) adds --cfg=... options to every smpirun.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SIM_DIR="$GRADSYNC_ROOT/bench/sim"
SMPI_BUILD="${SMPI_BUILD_DIR:-$GRADSYNC_ROOT/build-smpi}"

build() {
  install_missing "SimGrid's SMPI: smpicc, smpicxx, smpirun" libsimgrid-dev
  if [ ! -f "$SMPI_BUILD/CMakeCache.txt" ]; then
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    cmake -S "$GRADSYNC_ROOT" -B "$SMPI_BUILD" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_TOOLCHAIN_FILE="$GRADSYNC_ROOT/cmake/smpi-toolchain.cmake" "${launcher[@]}" >/dev/null
  fi
  local targets=(bench_allreduce pingpong)
  [ "${1:-}" != "--all" ] || targets+=(bench_sync train)
  cmake --build "$SMPI_BUILD" -j "${GRADSYNC_JOBS:-1}" --target "${targets[@]}"
}

calibrate() {
  mkdir -p "$SMPI_BUILD"
  c++ -O2 -march=native -std=c++20 "$SIM_DIR/host_speed.cpp" -o "$SMPI_BUILD/host_speed"
  "$SMPI_BUILD/host_speed" >"$SIM_DIR/host-speed.txt"
  say "this core: $(cat "$SIM_DIR/host-speed.txt") GFLOP/s (bench/sim/host-speed.txt)"
  python3 "$SIM_DIR/make_platforms.py" >/dev/null
}

# smpi_run PLATFORM NP LOG PROGRAM [ARGS]: PROGRAM (a name in build-smpi/bin) under smpirun; its output and
# SMPI's timing lines go to LOG and stdout, and the cost of the simulation (CPU seconds, peak memory) after them.
smpi_run() {
  local platform="$1" np="$2" log="$3" program="$4"
  shift 4
  local xml="$SIM_DIR/$platform.xml" hosts="$SIM_DIR/hosts-$platform.txt"
  [ -f "$xml" ] || die "no platform '$platform' (bench/sim/*.xml: $(cd "$SIM_DIR" && ls ./*.xml | sed 's|./||;s|\.xml||' | tr '\n' ' '))"
  local have
  have="$(wc -l <"$hosts")"
  [ "$np" -le "$have" ] || die "platform '$platform' holds $have ranks, asked for $np"
  [ -x "$SMPI_BUILD/bin/$program" ] || die "no $SMPI_BUILD/bin/$program: run scripts/simulate.sh build first"
  local speed
  speed="$(cat "$SIM_DIR/host-speed.txt")"
  # SMPI charges every MPI_Test that finds nothing done 100 us of simulated time, and the n-th such call in a row
  # n times that: progress by calls (train --pipeline, --buckets) tests between kernels and came out 4-5x slower
  # in simulated time than with a real MPI's cost of a test, about a microsecond.
  local polling=(--cfg=smpi/test:1e-6 --cfg=smpi/grow-injected-times:no)
  # shellcheck disable=SC2086  # SMPI_CFG is a list of words
  /usr/bin/time -f "# simulation cost: %e s wall, %U s user, %S s system, %M KB peak memory" \
    smpirun -platform "$xml" -hostfile "$hosts" -np "$np" --cfg=smpi/host-speed:"${speed}Gf" \
    --cfg=smpi/display-timing:yes "${polling[@]}" ${SMPI_CFG:-} "$SMPI_BUILD/bin/$program" "$@" 2>&1 |
    grep -v -e 'xbt_cfg/INFO' -e '^$' | tee "$log"
}

experiment="${1:-}"
[ -n "$experiment" ] || die "usage: scripts/simulate.sh build|calibrate|pingpong|allreduce-check|run ... (see --help)"
shift
case "$experiment" in
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  build) build "$@"; exit 0 ;;
  calibrate) calibrate; exit 0 ;;
esac
[ -f "$SIM_DIR/host-speed.txt" ] || die "no bench/sim/host-speed.txt: run scripts/simulate.sh calibrate first"
out="$SMPI_BUILD/sim/$experiment"
mkdir -p "$out"
case "$experiment" in
  pingpong)
    smpi_run flat-1g 2 "$out/pingpong.log" pingpong --max-bytes 16M --csv "$out/pingpong.csv" ;;
  allreduce-check)
    # One timed call per size: the simulated network is deterministic, so repetitions only cost wall time
    # (bench_allreduce's default moves ~1 GiB per size, up to 10,000 calls).
    for np in 4 8; do
      smpi_run flat-1g "$np" "$out/np$np.log" bench_allreduce --methods ring,rd,rhd,mpi --min-bytes 4 \
        --max-bytes 4M --step-factor 16 --iters 1 --reps 1 --warmup 1 --csv "$out/np$np.csv"
    done
    awk -F, 'FNR > 1 && $NF != 0 { bad = 1; print "wrong elements: " $0 } END { exit bad }' "$out"/np*.csv ||
      die "allreduce-check: wrong elements (above)"
    say "allreduce-check: every row exact ($out)" ;;
  run)
    [ "$#" -ge 3 ] || die "usage: scripts/simulate.sh run PLATFORM NP PROGRAM [ARGS]"
    platform="$1" np="$2" program="$3"
    shift 3
    [[ "$np" =~ ^[1-9][0-9]*$ ]] || die "NP must be a positive whole number, got '$np'"
    smpi_run "$platform" "$np" "$out/$program-$platform-np$np.log" "$program" "$@" ;;
  *) die "unknown experiment '$experiment' (build, calibrate, pingpong, allreduce-check, run)" ;;
esac
