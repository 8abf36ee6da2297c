# shellcheck shell=bash
# run PLATFORM NP PROGRAM [ARGS]   any program of build-smpi/bin under smpirun, e.g.
#                  scripts/simulate.sh run fattree-10g-1pn 64 bench_allreduce --methods rhd --iters 1 --reps 1

[ "$#" -ge 3 ] || die "usage: scripts/simulate.sh run PLATFORM NP PROGRAM [ARGS]"
platform="$1" np="$2" program="$3"
shift 3
smpi_run "$platform" "$np" "$out/$program-$platform-np$np.log" "$program" "$@"
