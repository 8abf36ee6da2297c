# Shared by the scripts in this folder: paths, logging, and running as root or through sudo.
GRADSYNC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$GRADSYNC_ROOT/build}"
BIN="$BUILD_DIR/bin"

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

# driver_folders OUT NAME: creates OUT/logs/NAME, set as $logs, and a scratch folder inside OUT, set as $work and
# removed when the script exits.
driver_folders() {
  logs="$1/logs/$2"
  mkdir -p "$logs"
  work="$(mktemp -d "$1/.$2.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
}

# need_uint FLAG VALUE [MIN]: flag values are checked up front, so a typo fails before minutes of runs.
need_uint() {
  [[ $2 =~ ^[0-9]+$ ]] || die "$1 needs a whole number, got '$2'"
  [ "$2" -ge "${3:-0}" ] || die "$1 must be at least ${3:-0}, got $2"
}
# need_value FLAG ARGC: the caller's "$#" after the flag, so a flag given last without its value is named.
need_value() { [ "$2" -ge 2 ] || die "$1 needs a value"; }

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
# lines FILE: its line count, 0 when a failed run never created it.
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# killed_note STATUS: why a run that ended with STATUS failed, when the status alone says it.
killed_note() { if [ "$1" -eq 137 ]; then echo ", a rank was killed by SIGKILL (another process or the OOM killer)"; fi; }
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
# method_flags NAME sets mflags (train arguments) and mmin_np (fewest ranks it runs on); unknown names fail.
method_flags() {
  local m="$1"
  mflags=(); mmin_np=1
  if [ "$m" = serial ]; then mflags=(--sync serial)
  elif [ "$m" = ring ] || [ "$m" = mpi ] || [ "$m" = ring-bf16 ]; then mflags=(--sync "$m")
  elif [[ $m =~ ^(ring|mpi)-avg([0-9]*)$ ]]; then
    mflags=(--sync "${BASH_REMATCH[1]}" --average-every "${BASH_REMATCH[2]:-4}")
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
