#!/usr/bin/env bash
# Runs gradsync's own binaries on simulated clusters with SimGrid's SMPI: every rank is a thread of one smpirun
# process, each computation burst between MPI calls is timed on this CPU and replayed in simulated time, and
# messages cross a simulated network (build-smpi/platforms/*.xml, written by bench/sim/make_platforms.py from
# bench/sim/host-speed.txt whenever they are missing or older than either; generated, so not in git).
# Usage: scripts/simulate.sh build [--all] | calibrate | platforms | EXPERIMENT [--out DIR] [ARGS]
#   build            install libsimgrid-dev if missing; configure build-smpi/ with smpicc/smpicxx
#                    (cmake/smpi-toolchain.cmake) and build bench_allreduce, bench_aggregate and pingpong (--all:
#                    bench_sync, train)
#   calibrate        measure this machine's core (bench/sim/host_speed.cpp) into bench/sim/host-speed.txt and
#                    rewrite the platforms with it
#   platforms        write the platforms if missing or stale, and print their folder (build-smpi/platforms)
#   EXPERIMENT       one of bench/sim/experiments/*.sh (listed below); results and logs go to --out DIR
#                    (default build-smpi/sim/EXPERIMENT). SMPI_CFG (words) adds --cfg=... options to every smpirun.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

SIM_DIR="$GRADSYNC_ROOT/bench/sim"
SMPI_BUILD="${SMPI_BUILD_DIR:-$GRADSYNC_ROOT/build-smpi}"
# The platforms and host files (NAME.xml, hosts-NAME.txt): generated from make_platforms.py and host-speed.txt.
PLATFORM_DIR="$SMPI_BUILD/platforms"

# ensure_platforms: writes PLATFORM_DIR when a platform or host file is missing, or older than make_platforms.py or
# host-speed.txt (a recalibration or an edit of the generator must not leave stale platforms behind). The stamp
# lists the platform files make_platforms.py wrote.
ensure_platforms() {
  local stamp="$PLATFORM_DIR/.written" xml fresh=1
  if [ -s "$stamp" ] && [ "$stamp" -nt "$SIM_DIR/make_platforms.py" ] && [ "$stamp" -nt "$SIM_DIR/host-speed.txt" ]; then
    while read -r xml; do
      [ -f "$xml" ] && [ -f "$(dirname "$xml")/hosts-$(basename "$xml" .xml).txt" ] || fresh=0
    done <"$stamp"
    [ "$fresh" = 0 ] || return 0
  fi
  [ -f "$SIM_DIR/host-speed.txt" ] || die "no bench/sim/host-speed.txt: run scripts/simulate.sh calibrate first"
  mkdir -p "$PLATFORM_DIR"
  python3 "$SIM_DIR/make_platforms.py" --out "$PLATFORM_DIR" >"$stamp.new" ||
    die "bench/sim/make_platforms.py could not write $PLATFORM_DIR"
  mv "$stamp.new" "$stamp"
}

build() {
  install_missing "SimGrid's SMPI: smpicc, smpicxx, smpirun" libsimgrid-dev
  if [ ! -f "$SMPI_BUILD/CMakeCache.txt" ]; then
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    cmake -S "$GRADSYNC_ROOT" -B "$SMPI_BUILD" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_TOOLCHAIN_FILE="$GRADSYNC_ROOT/cmake/smpi-toolchain.cmake" "${launcher[@]}" >/dev/null
  fi
  local targets=(bench_allreduce bench_aggregate pingpong)
  [ "${1:-}" != "--all" ] || targets+=(bench_sync train)
  cmake --build "$SMPI_BUILD" -j "${GRADSYNC_JOBS:-1}" --target "${targets[@]}"
}

calibrate() {
  mkdir -p "$SMPI_BUILD"
  c++ -O2 -march=native -std=c++20 "$SIM_DIR/host_speed.cpp" -o "$SMPI_BUILD/host_speed"
  "$SMPI_BUILD/host_speed" >"$SIM_DIR/host-speed.txt"
  say "this core: $(cat "$SIM_DIR/host-speed.txt") GFLOP/s (bench/sim/host-speed.txt)"
  ensure_platforms
}

platforms() { (cd "$PLATFORM_DIR" && ls ./*.xml | sed 's|./||;s|\.xml||' | paste -sd' ' -); }

# platform_files PLATFORM: sets xml and hosts, the platform file and host file smpirun gets. PLATFORM is a name of
# PLATFORM_DIR (flat-1g: flat-1g.xml and hosts-flat-1g.txt there) or the path of a platform file of the
# user's own (run --platform, or a name with a '/' or ending in .xml), whose host file is hosts-NAME.txt beside it unless $HOSTFILE
# names one (run --hostfile; it also replaces a named platform's). Every file is checked here, and named in errors.
HOSTFILE="" PLATFORM_FILE=""
platform_files() {
  if [ "$1" = "$PLATFORM_FILE" ] || [[ $1 == */* || $1 == *.xml ]]; then
    xml="$1"
    [ -f "$xml" ] || die "--platform $xml: no such file"
    [ -r "$xml" ] || die "--platform $xml: cannot be read"
    grep -q '<platform' "$xml" || die "--platform $xml: not a SimGrid platform file (no <platform> element)"
    hosts="$(dirname "$xml")/hosts-$(basename "$xml" .xml).txt"
    [ -n "$HOSTFILE" ] || [ -f "$hosts" ] ||
      die "--platform $xml: no host file beside it ($hosts): give one with --hostfile FILE (one host of the platform a line, or HOST:N for N ranks)"
  else
    xml="$PLATFORM_DIR/$1.xml"
    hosts="$PLATFORM_DIR/hosts-$1.txt"
    [ -f "$xml" ] || die "no platform '$1' ($(platforms); or --platform FILE of your own)"
  fi
  if [ -n "$HOSTFILE" ]; then
    hosts="$HOSTFILE"
    [ -f "$hosts" ] || die "--hostfile $hosts: no such file"
    [ -r "$hosts" ] || die "--hostfile $hosts: cannot be read"
  fi
}
# host_ranks FILE: how many ranks a host file holds (a line HOST:N holds N, any other non-empty line one).
host_ranks() { awk -F: 'NF == 0 || /^[ \t]*$/ { next } { n += (NF > 1 && $NF ~ /^[0-9]+$/) ? $NF : 1 } END { print n + 0 }' "$1"; }

# smpi_run PLATFORM NP LOG PROGRAM [ARGS]: PROGRAM (a name in build-smpi/bin) under smpirun; its output and
# SMPI's timing lines go to LOG and stdout, and the cost of the simulation (CPU seconds, peak memory) after them.
# SELECTOR (ompi, mpich; default SMPI's own) picks SMPI's MPI_Allreduce the way that MPI would.
smpi_run() {
  local platform="$1" np="$2" log="$3" program="$4"
  shift 4
  local xml hosts
  platform_files "$platform"
  [[ "$np" =~ ^[1-9][0-9]*$ ]] || die "the rank count must be a positive whole number, got '$np'"
  local have
  have="$(host_ranks "$hosts")"
  [ "$have" -gt 0 ] || die "host file $hosts names no host"
  [ "$np" -le "$have" ] || die "platform '$platform' holds $have ranks, asked for $np (host file $hosts)"
  [ -x "$SMPI_BUILD/bin/$program" ] || die "no $SMPI_BUILD/bin/$program: run scripts/simulate.sh build first"
  local speed
  speed="$(cat "$SIM_DIR/host-speed.txt")"
  # SMPI charges every MPI_Test that finds nothing done 100 us of simulated time, and the n-th such call in a row
  # n times that: progress by calls (train --pipeline, --buckets) tests between kernels and came out 4-5x slower
  # in simulated time than with a real MPI's cost of a test, about a microsecond.
  # bench_allreduce --shared-buffers maps one shared file block under every rank's buffer; blocks of the default
  # 1 MiB would need more mappings than Linux allows (vm.max_map_count) at 1024 ranks x 16 MiB.
  local cfg=(--cfg=smpi/test:1e-6 --cfg=smpi/grow-injected-times:no --cfg=smpi/shared-malloc-blocksize:67108864)
  [ -z "${SELECTOR:-}" ] || cfg+=(--cfg=smpi/coll-selector:"$SELECTOR")
  local status=0
  # shellcheck disable=SC2086  # SMPI_CFG is a list of words
  /usr/bin/time -f "# simulation cost: %e s wall, %U s user, %S s system, %M KB peak memory" \
    smpirun -platform "$xml" -hostfile "$hosts" -np "$np" --cfg=smpi/host-speed:"${speed}Gf" \
    --cfg=smpi/display-timing:yes "${cfg[@]}" ${SMPI_CFG:-} "$SMPI_BUILD/bin/$program" "$@" 2>&1 |
    grep -v -e 'xbt_cfg/INFO' -e 'smpi_colls/INFO' -e 'smpi_coll/INFO' -e '^$' | tee "$log" || status=$?
  local missing
  missing="$(sed -n "s/.*Host not found: '\(.*\)'.*/\1/p" "$log" | head -n 1)"
  [ -z "$missing" ] || die "host file $hosts names host '$missing', which platform $xml does not have"
  [ "$status" = 0 ] || die "$program on $np simulated ranks of $platform failed (exit $status; hosts from $hosts): see $log"
  # smpirun exits 0 when a rank calls MPI_Abort (SimGrid 3.32): its warning is the only sign.
  ! grep -q 'MPI_Abort was called' "$log" ||
    die "$program on $np simulated ranks of $platform was aborted (its error is above): see $log"
}

experiments() { (cd "$SIM_DIR/experiments" && ls ./*.sh | sed 's|./||;s|\.sh||' | paste -sd' ' -); }

experiment="${1:-}"
[ -n "$experiment" ] || die "usage: scripts/simulate.sh build|calibrate|EXPERIMENT ... (experiments: $(experiments); see --help)"
shift
case "$experiment" in
  -h | --help)
    show_help "$0"
    for f in "$SIM_DIR"/experiments/*.sh; do sed -n '2,/^$/{/^$/d;s/^# \{0,1\}/  /;p}' "$f"; done
    exit 0 ;;
  build) build "$@"; exit 0 ;;
  calibrate) calibrate; exit 0 ;;
  platforms) ensure_platforms; echo "$PLATFORM_DIR"; exit 0 ;;
esac
[ -f "$SIM_DIR/experiments/$experiment.sh" ] ||
  die "unknown experiment '$experiment' (build, calibrate, platforms, $(experiments))"
ensure_platforms
out="$SMPI_BUILD/sim/$experiment" named_out=""
if [ "${1:-}" = "--out" ]; then
  need_value "$1" $#
  out="$2" named_out=1
  shift 2
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# A results folder named with --out gets host.txt and, when the experiment ends, its README's head (host_txt); the
# default scratch folder under build-smpi/ does not.
[ -z "$named_out" ] || host_txt "$out" "scripts/simulate.sh $experiment (simulated; computation timed on this CPU)"
# The experiment sees smpi_run, $out, $SIM_DIR, $PLATFORM_DIR, $SMPI_BUILD and its own arguments.
# shellcheck source=/dev/null
source "$SIM_DIR/experiments/$experiment.sh"
