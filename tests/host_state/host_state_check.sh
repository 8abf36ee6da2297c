#!/usr/bin/env bash
# ctest cases for the main job's host-state handling (scripts/host_state.awk) on made-up runs, no MPI:
#   median    bench/scaling_median.awk: a run that saw the slow cross-core state is left out of its point's median,
#             counted in left_out, named in the odd-runs list, and still inside the range; a point whose runs all
#             saw the slow state keeps them and is marked slow;
#   headline  bench/sync_headline.awk: a paired run in the slow state is left out of the headline median and named,
#             and a separate-run speedup more than 10% off the paired one is flagged;
#   cpu       scripts/common.sh cpu_summary with BIN_DIR's bench_compute: vendor, family/model in hex, an ISA and a
#             measured core peak (skipped without x86 FMA).
# Usage: tests/host_state/host_state_check.sh CASE [BIN_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
case_name="${1:?usage: host_state_check.sh median|headline|cpu [BIN_DIR]}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { printf 'FAIL (%s): %s\n' "$case_name" "$*"; exit 1; }
# expect FILE PATTERN WHAT: FILE has a line matching the extended regex PATTERN.
expect() { grep -Eq "$2" "$1" || { cat "$1"; fail "$3"; }; }

# Three reps of serial and of ring at np=2. Probes are about 60 us (fast) but around ring's second rep (300 us,
# slow), whose wall time is also the slowest; mpi's three runs all saw the slow state.
cat >"$tmp/train.csv" <<'EOF'
sync,np,workers,epochs,batch,wall_s,compute_s,comm_s,test_accuracy
serial,1,1,5,32,1.06,1.00,0.06,0.975
ring,2,2,5,32,0.65,0.50,0.10,0.969
mpi,2,2,5,32,0.90,0.50,0.35,0.969
serial,1,1,5,32,1.07,1.00,0.06,0.975
ring,2,2,5,32,0.99,0.50,0.45,0.969
mpi,2,2,5,32,0.92,0.50,0.37,0.969
serial,1,1,5,32,1.05,1.00,0.06,0.975
ring,2,2,5,32,0.64,0.50,0.10,0.969
mpi,2,2,5,32,0.91,0.50,0.36,0.969
EOF
cat >"$tmp/host_state.csv" <<'EOF'
run,method,np,rep,xcore_before_us,xcore_after_us
1,serial,1,1,61.0,60.0
2,ring,2,1,60.0,62.0
3,mpi,2,1,310.0,305.0
4,serial,1,2,62.0,59.0
5,ring,2,2,300.0,310.0
6,mpi,2,2,320.0,301.0
7,serial,1,3,60.0,60.5
8,ring,2,3,60.5,61.0
9,mpi,2,3,299.0,303.0
EOF

case "$case_name" in
  median)
    awk -F, -v ncores=2 -v hostfile= -v rows=60000 -v runlist="$tmp/runlist" -v oddlist="$tmp/odd" \
      -f "$root/scripts/host_state.awk" -f "$root/bench/scaling_median.awk" "$tmp/host_state.csv" "$tmp/train.csv" \
      >"$tmp/scaling.csv"
    # ring: the median of the two fast runs (0.645), the range over all three, one left out.
    expect "$tmp/scaling.csv" '^ring,2,2,0,0\.6450,.*,0\.6400,0\.9900,2,1,fast$' "ring's median kept the slow run"
    expect "$tmp/odd" '^ring np=2 rep 2 saw the slow cross-core state \(xcore 1 MiB 300\.0 us before, 310\.0 us after' \
      "ring's slow run is not named"
    [ "$(wc -l <"$tmp/odd")" -eq 1 ] || fail "expected exactly one run left out, got: $(cat "$tmp/odd")"
    expect "$tmp/scaling.csv" '^serial,1,1,0,1\.0600,1\.000,.*,3,0,fast$' "serial's three fast runs"
    expect "$tmp/scaling.csv" '^mpi,2,2,0,0\.9100,.*,3,0,slow$' "mpi's three slow runs are one slow point"
    "$root/bench/compare_table.sh" "$tmp/scaling.csv" >"$tmp/table"
    expect "$tmp/table" '^ring .*0\.64-0\.99  fast \(2\), 1 left out !$' "the table shows ring's range and the left-out run"
    expect "$tmp/table" '^mpi .* slow \(3\) #$' "the table marks mpi's state as not the baseline's"
    ;;
  headline)
    awk -F, -v ncores=2 -v hostfile= -v rows=60000 -v runlist="$tmp/runlist" -v oddlist="$tmp/odd" \
      -f "$root/scripts/host_state.awk" -f "$root/bench/scaling_median.awk" "$tmp/host_state.csv" "$tmp/train.csv" \
      >"$tmp/scaling.csv"
    # Paired run 2 saw the slow state and the lowest ratios; runs 1 and 3 the fast one.
    cat >"$tmp/sync_ab.csv" <<'EOF'
run,method,step_us,speedup,xcore_before_us,xcore_after_us
1,ring,150.0,1.600,61.0,60.0
1,mpi,151.0,1.590,61.0,60.0
1,serial,120.0,1.000,61.0,60.0
2,ring,190.0,1.260,60.0,320.0
2,mpi,191.0,1.250,60.0,320.0
2,serial,120.0,1.000,60.0,320.0
3,ring,148.0,1.620,320.0,310.0
3,mpi,149.0,1.610,320.0,310.0
3,serial,120.0,1.000,320.0,310.0
4,ring,149.0,1.610,310.0,62.0
4,mpi,150.0,1.600,310.0,62.0
4,serial,120.0,1.000,310.0,62.0
5,ring,150.0,1.600,62.0,61.0
5,mpi,151.0,1.590,62.0,61.0
5,serial,120.0,1.000,62.0,61.0
EOF
    awk -F, -v np=2 -f "$root/scripts/host_state.awk" -f "$root/bench/sync_headline.awk" \
      "$tmp/host_state.csv" "$tmp/sync_ab.csv" "$tmp/scaling.csv" >"$tmp/headline"
    # Runs 1 and 5 saw the fast state throughout, run 3 the slow one, runs 2 and 4 a change: 1 and 5 count.
    expect "$tmp/headline" '^  ring +1\.60x +1\.26-1\.62x +2 of 5, fast +1\.64x +\+2\.7%$' "ring's paired median or range"
    expect "$tmp/headline" '^  mpi +1\.59x +1\.25-1\.61x +2 of 5, fast +1\.17x +-26\.7% !$' "mpi's 26% gap is not flagged"
    for r in 2 3 4; do
      expect "$tmp/headline" "^  paired run $r saw .*left out of the median$" "paired run $r is not named"
    done
    expect "$tmp/headline" 'within 10% of each other: ring; not: mpi \(!\)$' "the 10% verdict"
    ;;
  cpu)
    bin="${2:?the cpu case needs BIN_DIR}"
    grep -qw fma /proc/cpuinfo 2>/dev/null || { echo "SKIP (cpu: no x86 FMA to measure a core peak with)"; exit 77; }
    summary="$(BUILD_DIR="$(dirname "$bin")" bash -c "source '$root/scripts/common.sh'; BIN='$bin'; cpu_summary")"
    echo "$summary"
    [[ $summary =~ \((Intel|AMD|[A-Za-z]+)\ family\ 0x[0-9a-f]{2}\ model\ 0x[0-9a-f]{2}\),\ (AVX-512|AVX2|SSE) ]] \
      || fail "no vendor, family/model in hex or ISA in: $summary"
    [[ $summary =~ core\ peak\ [0-9]+\.[0-9]\ GFLOP/s\ measured ]] || fail "no measured core peak in: $summary"
    if grep -qw avx512f /proc/cpuinfo; then
      [[ $summary =~ AVX-512\ \((512|256)-bit\ FMA\ units\) ]] || fail "AVX-512 without its units' width: $summary"
    fi
    ;;
  *) fail "unknown case '$case_name'" ;;
esac
echo "PASS ($case_name)"
