# Shared by the scripts in this folder: paths, logging, and running as root or through sudo.
GRADSYNC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$GRADSYNC_ROOT/build}"
BIN="$BUILD_DIR/bin"

# The command that started the script sourcing this file, as one would type it again from the tree's top (the script's
# path relative to it when it is inside): host_txt records it in a results folder. Sourced at a script's top level
# (directly or through bench/cluster/drivers.sh), "$@" here is still the script's own arguments.
_script_command() {
  local script="$1" real
  shift
  real="$(realpath -- "$script" 2>/dev/null || echo "$script")"
  case "$real" in "$GRADSYNC_ROOT"/*) script="${real#"$GRADSYNC_ROOT"/}" ;; esac
  case "$script" in *.sh) printf 'bash %s' "$script" ;; *) printf '%s' "$script" ;; esac
  [ $# -eq 0 ] || printf ' %q' "$@"
}
GRADSYNC_COMMAND="$(_script_command "$0" "$@")"

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "need root to run: $* (re-run as root or install sudo)"; fi
}

# Which MPI launches, and its flags (mpirun_flags, training_shm_flags, ...): scripts/mpi.sh.
source "$GRADSYNC_ROOT/scripts/mpi.sh"
# mpi_setup: for a script about to launch ranks of $BUILD_DIR: sets MPIEXEC (the launcher that tree was configured
# with) and MPI_FLAVOUR, the yield shim, TRAINING_SHM_FLAGS and FORCED_RING, and exports the launcher's
# environment.
mpi_setup() {
  mpi_launcher "$BUILD_DIR" || die "cannot tell which MPI launches $BUILD_DIR (see above)"
  mpi_yield_shim "$BIN"
  mpi_env
  [ "${#MPI_ENV[@]}" -eq 0 ] || export "${MPI_ENV[@]}"
  training_shm_flags
  forced_ring_flags
}

# --- Shared by the bench/ drivers and run.sh ---------------------------------------------------------------

# refuse_existing DIR FILE...: results are never overwritten, so stop if any DIR/FILE exists already.
refuse_existing() {
  local dir="$1" f
  shift
  for f in "$@"; do
    [ ! -e "$dir/$f" ] || die "$dir/$f already exists: pick a new --out (results are never overwritten)"
  done
}

# at_exit NAME COMMAND: runs COMMAND (a string for eval) when the script exits, however it exits, after the commands
# registered before it; drop_exit NAME forgets it. One EXIT trap runs them all, so no helper undoes another's.
_exit_names=() _exit_commands=()
at_exit() {
  _exit_names+=("$1") _exit_commands+=("$2")
  trap _run_at_exit EXIT
}
drop_exit() {
  local i
  for i in "${!_exit_names[@]}"; do
    [ "${_exit_names[$i]}" != "$1" ] || unset "_exit_names[$i]" "_exit_commands[$i]"
  done
}
_run_at_exit() {
  local i
  for i in "${!_exit_commands[@]}"; do eval "${_exit_commands[$i]}" || true; done
}

# driver_folders OUT NAME: creates OUT/logs/NAME, set as $logs, and a scratch folder inside OUT, set as $work and
# removed when the script exits.
driver_folders() {
  logs="$1/logs/$2"
  mkdir -p "$logs"
  work="$(mktemp -d "$1/.$2.XXXXXX")"
  at_exit scratch 'rm -rf "$work"'
}

# need_uint FLAG VALUE [MIN]: flag values are checked up front, so a typo fails before minutes of runs.
need_uint() {
  [[ $2 =~ ^[0-9]+$ ]] || die "$1 needs a whole number, got '$2'"
  [ "$2" -ge "${3:-0}" ] || die "$1 must be at least ${3:-0}, got $2"
}
# need_value FLAG ARGC: the caller's "$#" after the flag, so a flag given last without its value is named.
need_value() { [ "$2" -ge 2 ] || die "$1 needs a value"; }

# parse_flags NAME SPEC... -- ARG...: sets a driver's variables (globals it has given their defaults) from its
# command line, each value checked as it is read, so a typo fails before minutes of runs. A SPEC is
# "FLAG VAR [KIND ...]", one word each but MESSAGE, with KIND
#   (none)               any value;
#   switch               takes no value: VAR=1;
#   uint [MIN]           a whole number >= MIN (default 0);
#   match REGEX MESSAGE  a value REGEX matches, else dies with MESSAGE (a printf format: %s is the value);
#   above NUM MESSAGE    a decimal number above NUM, else likewise.
# -h/--help prints the driver's header comment (show_help); any other flag dies naming NAME.
# shellcheck disable=SC2059  # a spec's MESSAGE is the printf format
parse_flags() {
  local _pf_name="$1" _pf_specs=() _pf_spec _pf_flag _pf_var _pf_kind _pf_a _pf_b _pf_found
  shift
  while [ "$1" != -- ]; do _pf_specs+=("$1"); shift; done
  shift
  while [ $# -gt 0 ]; do
    case "$1" in -h|--help) show_help "${BASH_SOURCE[1]}"; exit 0 ;; esac
    _pf_found=""
    for _pf_spec in "${_pf_specs[@]}"; do
      read -r _pf_flag _pf_var _pf_kind _pf_a _pf_b <<<"$_pf_spec"
      if [ "$_pf_flag" = "$1" ]; then _pf_found=1; break; fi
    done
    [ -n "$_pf_found" ] || die "$_pf_name: unknown option '$1' (see --help)"
    if [ "$_pf_kind" = switch ]; then printf -v "$_pf_var" 1; shift; continue; fi
    need_value "$1" $#
    case "$_pf_kind" in
      uint) need_uint "$1" "$2" "$_pf_a" ;;
      match) [[ $2 =~ $_pf_a ]] || die "$(printf -- "$_pf_b" "$2")" ;;
      above) awk -v s="$2" -v m="$_pf_a" 'BEGIN { exit !(s ~ /^[0-9]+(\.[0-9]+)?$/ && s + 0 > m + 0) }' \
               || die "$(printf -- "$_pf_b" "$2")" ;;
    esac
    printf -v "$_pf_var" '%s' "$2"
    shift 2
  done
}

# need_bins NAME...: each of $BIN/NAME must be there before any run starts.
need_bins() {
  local b
  for b in "$@"; do [ -x "$BIN/$b" ] || die "$BIN/$b is missing: build first (scripts/setup.sh)"; done
}

# driver_results NAME FILE...: the results folder of a driver that runs on this node: $out (default
# results/NAME-DATE) holding none of FILE... nor logs/NAME yet, and its $logs and $work (driver_folders); writes
# OUT/host.txt (results_header) unless an earlier driver of the same folder did.
driver_results() {
  local name="$1"
  shift
  out="${out:-$GRADSYNC_ROOT/results/$name-$(date +%Y%m%d-%H%M%S)}"
  refuse_existing "$out" "$@" "logs/$name"
  driver_folders "$out" "$name"
  host_txt "$out" "$name"
}

# run_limited LIMIT_S LOG CMD...: CMD's exit status, or 124 exactly when it ran out of time. (timeout itself says
# 137 when SIGTERM was not enough, and mpirun says 137 when a rank was killed by someone else: the clock decides.)
# A deadlocked collective must end as a reported failure, not as a driver that never returns. timeout puts the
# job in its own process group (so a timeout kills every rank), which also hides it from the terminal's Ctrl-C:
# the job runs in the background and _stop_limited passes INT/TERM on to it.
# GRADSYNC_TIMEOUT (seconds) replaces every driver's per-run limit.
_limited_pid=""
run_limited() {
  local limit="${GRADSYNC_TIMEOUT:-$1}" log="$2" rc=0 t0=$SECONDS
  shift 2
  trap _stop_limited INT TERM
  timeout --kill-after=20 "$limit" "$@" >"$log" 2>&1 </dev/null &
  _limited_pid=$!
  wait "$_limited_pid" || rc=$?
  _limited_pid=""
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    if [ $((SECONDS - t0)) -ge "$limit" ]; then rc=124; elif [ "$rc" -eq 124 ]; then rc=1; fi
  fi
  return "$rc"
}
# cpu_summary: the CPU a figure came from, for every results header (results_header) and chart subtitle, e.g.
# "AMD EPYC 7B13 (AMD family 0x19 model 0x01), AVX2 + FMA, core peak 61.8 GFLOP/s measured". The vector width is
# the widest ISA the CPU exposes; for AVX-512 the measured peaks also tell the FMA units' width (512-bit vectors
# no faster than 256-bit ones: 256-bit units). The peak is bench_compute --peak (bench/fma_peak.hpp), measured on
# every call: on a busy host it is lower, and the header should say so.
cpu_summary() {
  local peaks=""
  [ ! -x "$BIN/bench_compute" ] || peaks="$("$BIN/bench_compute" --peak 2>/dev/null || true)"
  awk -F': ' -v peaks="$peaks" '
    /^vendor_id/ && v == "" { v = $2 } /^model name/ && n == "" { n = $2 }
    /^cpu family/ && f == "" { f = $2 } /^model[ \t]*:/ && m == "" { m = $2 } /^flags/ && fl == "" { fl = " " $2 " " }
    END {
      vendor = v == "GenuineIntel" ? "Intel" : v == "AuthenticAMD" ? "AMD" : v
      split(peaks, kv, /[ =]/); p512 = kv[2] + 0; p256 = kv[4] + 0; peak = p512 > p256 ? p512 : p256
      if (fl ~ / avx512f /) {
        isa = "AVX-512"
        if (p512 > 0 && p256 > 0) isa = isa (p512 > 1.5 * p256 ? " (512-bit FMA units)" : " (256-bit FMA units)")
      } else isa = fl ~ / avx2 / ? "AVX2" : "SSE"
      if (fl ~ / fma /) isa = isa " + FMA"
      printf "%s (%s family 0x%02x model 0x%02x), %s, %s", n, vendor, f, m, isa,
        (peak > 0 ? sprintf("core peak %.1f GFLOP/s measured", peak) : "core peak not measured (no bench_compute --peak)")
    }' /proc/cpuinfo
}
# host_txt DIR WHAT: DIR/host.txt, the results folder's header (results_header WHAT; plots/make_charts.sh names the
# machine in its charts' subtitle from it), then the command that started this driver and the commit of the code,
# unless an earlier driver of the same folder wrote it. When the driver exits, however it exits, DIR/README.md gets
# its head block from them (results_readme).
host_txt() {
  if [ ! -e "$1/host.txt" ]; then
    { results_header "$2"; printf '# command: %s\n# commit: %s\n' "$GRADSYNC_COMMAND" "$(code_commit)"; } >"$1/host.txt"
  fi
  _readme_dir="$1"
  at_exit readme 'results_readme "$_readme_dir"'
}
# code_commit: the commit of this tree, with the count of files that differ from it when the working tree has
# uncommitted changes (the binaries in build/ are not checked against it). Read-only git calls without optional
# locks: another git process in the tree is never disturbed.
code_commit() {
  local commit changed
  if commit="$(git -C "$GRADSYNC_ROOT" --no-optional-locks rev-parse --short HEAD 2>/dev/null)"; then
    changed="$(git -C "$GRADSYNC_ROOT" --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null | wc -l)"
    [ "$changed" -eq 0 ] || commit+=" + uncommitted changes in $changed file(s)"
    echo "$commit"
  else
    echo "not recorded (not a git checkout)"
  fi
}
# results_readme DIR: writes or refreshes the head block of DIR/README.md (command, commit, CPU, date, files) from
# DIR/host.txt, keeping what was written below it (scripts/results_readme.py). A failure only warns.
results_readme() {
  python3 "$GRADSYNC_ROOT/scripts/results_readme.py" "$1" || say "warning: $1/README.md was not written (scripts/results_readme.py)"
}
# results_header WHAT: the first line of a results file or folder: what ran, on which host and CPU (cpu_summary),
# when (UTC). The one place a results header is written: figures without their machine mean little.
results_header() {
  printf '# %s (%s, %s, %s UTC)\n' "$1" "$(uname -n)" "$(cpu_summary)" "$(date -u '+%Y-%m-%d %H:%M')"
}
# xcore_probe LOG: the host's cross-core state now, on stdout: the time in us of a 1 MiB ring schedule through a
# shared window between two ranks on two cores (bench_allreduce's xcore, bench/cross_core_bound.hpp), or nan if
# the probe failed (its output is in LOG, its CSV in LOG.csv). One short launch. Some hosts (VMs whose vCPUs move)
# stay several times slower at this for minutes at a time, and so is every run that exchanges gradients meanwhile:
# a probe before and after a run tells which state the run saw. Needs mpi_setup.
xcore_probe() {
  local MPIRUN_FLAGS=()
  mpirun_flags 2
  if run_limited 60 "$1" "$MPIEXEC" -n 2 "${MPIRUN_FLAGS[@]}" "$BIN/bench_allreduce" --methods xcore \
       --min-bytes 1M --max-bytes 1M --iters 20 --reps 3 --csv "$1.csv"; then
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
      $c["method"] == "xcore" { v = $c["time_us"] } END { print v == "" ? "nan" : v }' "$1.csv"
  else
    echo nan
  fi
}
# lines FILE: its line count, 0 when a failed run never created it.
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# killed_note STATUS: why a run that ended with STATUS failed, when the status alone says it.
killed_note() { if [ "$1" -eq 137 ]; then echo ", a rank was killed by SIGKILL (another process or the OOM killer)"; fi; }
# check_run WHERE STATUS LIMIT_S LOG [WROTE]: whether a run_limited run that ended with STATUS succeeded. One that
# failed (STATUS) or exited 0 with WROTE (the driver's own finding about its output, e.g. "wrote no CSV row"; empty
# when the output is whole) is added to $failed as "WHERE: why (log: LOG)", and check_run returns 1.
check_run() {
  local why=""
  if [ "$2" -eq 124 ]; then why="timed out after ${GRADSYNC_TIMEOUT:-$3}s"
  elif [ "$2" -ne 0 ]; then why="exit status $2$(killed_note "$2")"
  elif [ -n "${5:-}" ]; then why="exited 0 but $5"; fi
  [ -n "$why" ] || return 0
  failed+=("$1: $why (log: $4)")
  return 1
}
# say_failed LOG: the latest of $failed, and the end of the run's LOG, on the terminal.
# shellcheck disable=SC2154  # failed: the driver's list of failed runs
say_failed() {
  say "FAILED ${failed[-1]}"
  tail -n 5 "$1" | sed 's/^/    /' >&2
}
# append_rows CSV TOTAL: CSV's data rows appended to TOTAL, which starts with CSV's header line.
append_rows() {
  [ -e "$2" ] || head -n 1 "$1" >"$2"
  tail -n +2 "$1" >>"$2"
}
# exit_if_failed HEADLINE: with entries in $failed, lists them under "N HEADLINE:" and exits with status 1.
exit_if_failed() {
  [ "${#failed[@]}" -gt 0 ] || return 0
  printf '%d %s:\n' "${#failed[@]}" "$1" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
}
_stop_limited() {
  if [ -n "$_limited_pid" ]; then
    kill -TERM "$_limited_pid" 2>/dev/null || true
    wait "$_limited_pid" 2>/dev/null || true
  fi
  printf 'interrupted\n' >&2
  exit 130
}

# Method names as they appear in the train CSV's sync column, and the train flags behind them:
#   serial, ring, mpi, ps-bsp, ps-asp, ps-ssp[S] (S=2), ring-avg[H] / mpi-avg[H] (local SGD, H=4),
#   and any ps method with -kK for K server shards (ps-bsp-k2).
# The allreduce methods train synchronizes with (those that leave the sum on every rank), from the method table
# through bench_allreduce --list-methods once $BIN has it (else the three every build has): $training_allreduces,
# space-separated, read once.
load_training_allreduces() {
  [ -z "${training_allreduces:-}" ] || return 0
  if [ -x "${BIN:-}/bench_allreduce" ]; then
    training_allreduces="$("$BIN/bench_allreduce" --list-methods | awk -F'\t' '$2 ~ /servers=none/ {print $1}' |
      paste -sd' ')"
  fi
  training_allreduces="${training_allreduces:-ring mpi ring-bf16}"
}
# method_flags NAME sets mflags (train arguments) and mmin_np (fewest ranks it runs on); unknown names fail. The
# names are TrainConfig::sync_name()'s, the `method` column of train's CSVs.
method_flags() {
  local m="$1"
  mflags=(); mmin_np=1
  load_training_allreduces
  if [ "$m" = serial ]; then mflags=(--sync serial)
  elif [[ " $training_allreduces " == *" $m "* ]]; then mflags=(--sync "$m")
  elif [[ $m =~ ^(ring|mpi)-avg([0-9]*)$ ]]; then
    mflags=(--sync "${BASH_REMATCH[1]}" --average-every "${BASH_REMATCH[2]:-4}")
  elif [[ $m =~ ^(ring|mpi)-avg([0-9]+)-outer([0-9.]+)m([0-9.]+)$ ]]; then
    mflags=(--sync "${BASH_REMATCH[1]}" --average-every "${BASH_REMATCH[2]}" --outer-lr "${BASH_REMATCH[3]}"
            --outer-momentum "${BASH_REMATCH[4]}")
  elif [[ $m =~ ^gossip-([a-z0-9]+)(-async)?$ ]]; then  # the topology's name is train's to check (--topology)
    mflags=(--sync gossip --topology "${BASH_REMATCH[1]}")
    [ -z "${BASH_REMATCH[2]}" ] || mflags+=(--async)
  elif [[ $m =~ ^gossip-([a-z0-9]+)(-g([0-9.]+))?-(topk([0-9.]+)|sign)$ ]]; then  # CHOCO-SGD, gamma when not default
    mflags=(--sync gossip --topology "${BASH_REMATCH[1]}" --compress "${BASH_REMATCH[4]/#topk/topk:}")
    [ -z "${BASH_REMATCH[3]}" ] || mflags+=(--gossip-gamma "${BASH_REMATCH[3]}")
  elif [[ $m =~ ^ps-(bsp|asp|ssp([0-9]*))(-k([0-9]+))?$ ]]; then
    local servers="${BASH_REMATCH[4]:-1}"
    case "${BASH_REMATCH[1]}" in
      bsp) mflags=(--sync ps --ps-mode bsp) ;;
      asp) mflags=(--sync ps --ps-mode asp) ;;
      *) mflags=(--sync ps --ps-mode ssp --staleness "${BASH_REMATCH[2]:-2}") ;;
    esac
    mflags+=(--servers "$servers")
    mmin_np=$((servers + 1))   # the server ranks plus at least one worker
  else
    return 1
  fi
}
# need_method NAME [FLAG]: method_flags NAME, for an entry of FLAG (--methods): an unknown name dies listing the
# known ones.
need_method() {
  method_flags "$1" \
    || die "${2:---methods}: unknown method '$1' (serial, an allreduce: $training_allreduces; ps-bsp, ps-asp, ps-ssp[S], ps-...-kK; ring-avg[H], mpi-avg[H], ring-avgH-outerLRmMU; gossip-TOPOLOGY[-async]; gossip-TOPOLOGY[-gG]-topkF|sign)"
}

# Installs those of the given Debian packages that are not installed yet (so a second run is fast); `why` is
# printed with the list.
install_missing() {  # install_missing WHY PKG...
  local why="$1" missing=() p
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  say "installing ${missing[*]}${why:+ ($why)}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Prints a script's header comment (line 2 up to `set -euo`) as its --help.
show_help() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$1"; }

# Splits LIST into the array nps, each a whole number >= MIN (the flag is named in errors).
read_np_list() {  # read_np_list LIST MIN
  read -ra nps <<<"$1"
  [ "${#nps[@]}" -gt 0 ] || die "--np-list is empty"
  local n
  for n in "${nps[@]}"; do need_uint "--np-list entry" "$n" "$2"; done
}
