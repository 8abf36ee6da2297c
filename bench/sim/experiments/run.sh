# shellcheck shell=bash
# run [--platform FILE] [--hostfile FILE] PLATFORM|NP ... : any program of build-smpi/bin under smpirun:
#                  run PLATFORM NP PROGRAM [ARGS]   a platform of bench/sim by name, e.g.
#                    scripts/simulate.sh run fattree-10g-1pn 64 bench_allreduce --methods rhd --iters 1 --reps 1
#                  run --platform FILE --hostfile FILE NP PROGRAM [ARGS]   a platform of your own (a SimGrid
#                    platform XML) and its host file (one host a line, HOST:N for N ranks; by default
#                    hosts-NAME.txt beside FILE); --hostfile alone replaces a named platform's host file

platform=""
while [ $# -gt 0 ]; do
  case "$1" in
    --platform) need_value "$1" $#; platform="$2" PLATFORM_FILE="$2"; shift 2 ;;
    --hostfile) need_value "$1" $#; HOSTFILE="$2"; shift 2 ;;
    *) break ;;
  esac
done
usage="usage: scripts/simulate.sh run [--out DIR] PLATFORM NP PROGRAM [ARGS], or run [--out DIR] --platform FILE [--hostfile FILE] NP PROGRAM [ARGS]"
if [ -z "$platform" ]; then
  [ "$#" -ge 3 ] || die "$usage"
  platform="$1"
  shift
fi
[ "$#" -ge 2 ] || die "$usage"
np="$1" program="$2"
shift 2
smpi_run "$platform" "$np" "$out/$program-$(basename "$platform" .xml)-np$np.log" "$program" "$@"
