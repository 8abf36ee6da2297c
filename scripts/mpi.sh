#!/usr/bin/env bash
# Which MPI launches gradsync, and that launcher's flags: the one place that knows Open MPI's mpirun from MPICH's
# Hydra (mpiexec.hydra). The scripts source it through common.sh; CMake runs it (`mpi.sh cmake ...`) to get the
# same flags for ctest, so a flag is written here and nowhere else.
#
# Sourced:   mpi_launcher [BUILD_DIR]   sets MPIEXEC and MPI_FLAVOUR (openmpi or mpich)
#            mpirun_flags NP [shared]   sets MPIRUN_FLAGS for NP ranks on this machine
#            ... and the helpers below.
# Run:       mpi.sh flavour MPIEXEC                      prints openmpi or mpich
#            mpi.sh cmake MPIEXEC NP SHIM                prints "flavour=", "flags=" and "env=" lines (;-lists)

# Physical cores, which is what Open MPI counts as slots (nproc counts SMT threads).
cores() {
  local n
  n="$(lscpu -p=Core,Socket 2>/dev/null | grep -v '^#' | sort -u | wc -l)"
  [ "${n:-0}" -gt 0 ] && echo "$n" || nproc 2>/dev/null || echo 1
}

# The launcher's flavour from its --version: a launcher neither of the two is named with what it printed.
mpi_flavour() {  # mpi_flavour MPIEXEC
  local out
  out="$(timeout 20 "$1" --version 2>&1)" || {
    printf 'error: MPI launcher %s: `%s --version` failed (is it installed?): %s\n' "$1" "$1" "$(head -c 300 <<<"$out")" >&2
    return 1
  }
  case "$out" in
    *"Open MPI"*|*OpenRTE*) echo openmpi ;;
    *HYDRA*) echo mpich ;;
    *) printf 'error: MPI launcher %s is neither Open MPI nor MPICH (Hydra); its --version said: %s\n' "$1" \
         "$(head -c 300 <<<"$out")" >&2
       return 1 ;;
  esac
}

# mpi_launcher [BUILD_DIR]: the launcher a build tree was configured with (CMake's MPIEXEC_EXECUTABLE), so that
# scripts run a tree built against MPICH with MPICH's launcher. $GRADSYNC_MPIEXEC wins; plain mpirun otherwise.
mpi_launcher() {
  MPIEXEC="${GRADSYNC_MPIEXEC:-}"
  if [ -z "$MPIEXEC" ] && [ -n "${1:-}" ] && [ -f "$1/CMakeCache.txt" ]; then
    MPIEXEC="$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$1/CMakeCache.txt")"
  fi
  MPIEXEC="${MPIEXEC:-mpirun}"
  MPI_FLAVOUR="$(mpi_flavour "$MPIEXEC")" || return 1
}

# The variable each launcher sets to a process's rank in the world (before MPI_Init, for finding a rank's pid).
mpi_rank_var() { case "$MPI_FLAVOUR" in mpich) echo PMI_RANK ;; *) echo OMPI_COMM_WORLD_RANK ;; esac; }

# mpi_yield_shim BIN: sets MPI_YIELD_SHIM to the yield shim of the tree whose binaries are in BIN (see
# mpirun_flags), or to nothing when that tree has none (an Open MPI tree).
mpi_yield_shim() {
  MPI_YIELD_SHIM=""
  if [ -f "$1/../lib/libgradsync_ucx_yield.so" ]; then MPI_YIELD_SHIM="$(realpath "$1/../lib/libgradsync_ucx_yield.so")"; fi
}

# mpirun_flags NP [shared|bound]: sets MPIRUN_FLAGS, the placement for NP ranks on this machine (bound: one
# rank per host of a hostfile, always bound). Ranks that fit are bound one per core (no migrations, and no
# sched_yield in their waits). More ranks than cores, or `shared` (a test suite that may share the cores with
# anything), must yield when idle or busy-polling starves them:
#   Open MPI:  --oversubscribe (it refuses more ranks than slots otherwise) and mpi_yield_when_idle.
#   MPICH:     Hydra places any number of ranks. Debian's MPICH 4.0 runs the ch4:ucx device, whose waits spin
#              in ucp_worker_progress with no sched_yield and no setting for one (MPIR_CVAR_POLLS_BEFORE_YIELD is
#              ch3:nemesis only), so each message between oversubscribed ranks waits for a scheduler time slice.
#              The shim tests/launcher/ucx_yield.c, built into an MPICH tree's lib/, yields after a poll that
#              found nothing; it is preloaded into the ranks when $MPI_YIELD_SHIM names it (mpi_yield_shim).
mpirun_flags() {
  local np="$1" shared="${2:-}"
  if [ "$shared" = bound ] || { [ "$shared" != shared ] && [ "$np" -le "$(cores)" ]; }; then
    case "$MPI_FLAVOUR" in
      mpich) MPIRUN_FLAGS=(-bind-to core) ;;
      *) MPIRUN_FLAGS=(--bind-to core) ;;
    esac
    return 0
  fi
  case "$MPI_FLAVOUR" in
    mpich)
      MPIRUN_FLAGS=(-bind-to none)
      if [ -n "${MPI_YIELD_SHIM:-}" ]; then MPIRUN_FLAGS+=(-genv LD_PRELOAD "$MPI_YIELD_SHIM"); fi
      ;;
    *) MPIRUN_FLAGS=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1) ;;
  esac
}

# test_launcher BIN_DIR NP: for a ctest script running the binaries of BIN_DIR's tree: the launcher that tree was
# configured with (mpi_launcher), its yield shim and environment exported, and in the array mpirun_ the launcher
# with its flags for NP ranks sharing the cores. Returns 1 (with mpi_launcher's message) when it cannot tell.
test_launcher() {
  mpi_launcher "$1/.." || return 1
  mpi_yield_shim "$1"
  mpi_env
  [ "${#MPI_ENV[@]}" -eq 0 ] || export "${MPI_ENV[@]}"
  mpirun_flags "$2" shared
  mpirun_=("$MPIEXEC" "${MPIRUN_FLAGS[@]}")
}

# hostfile_flags FILE: sets HOSTFILE_FLAGS, the launcher's flag for a hostfile (whose format is the launcher's
# own: Open MPI's "host slots=N" lines, Hydra's "host:N").
hostfile_flags() {
  case "$MPI_FLAVOUR" in
    mpich) HOSTFILE_FLAGS=(-f "$1") ;;
    *) HOSTFILE_FLAGS=(--hostfile "$1") ;;
  esac
}

# hostfile_hosts FILE: sets HOSTFILE_HOSTS, the hosts of a hostfile in its order, read in the launcher's format
# (Open MPI: "host [slots=N ...]"; Hydra: "host[:N]"; # starts a comment). A line in the other launcher's format or
# a host listed twice is named on stderr, and the function returns 1.
hostfile_hosts() {
  local line lineno=0 host rest h keys='^( +[a-z_]+=[0-9]+)* *$'
  HOSTFILE_HOSTS=()
  while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    line="${line%%#*}"
    read -r host rest <<<"$line" || true
    [ -n "${host:-}" ] || continue
    case "$MPI_FLAVOUR" in
      mpich)
        if [ -n "$rest" ] || [[ ! $host =~ ^[^:]+(:[0-9]+)?$ ]]; then
          printf 'error: %s line %d: "%s" is not "host" or "host:N" (MPICH Hydra'"'"'s format, this tree'"'"'s launcher)\n' \
            "$1" "$lineno" "$line" >&2
          return 1
        fi
        host="${host%%:*}" ;;
      *)
        if [[ $host == *:* ]] || [[ ! " $rest " =~ $keys ]]; then
          printf 'error: %s line %d: "%s" is not "host slots=N" (Open MPI'"'"'s format, this tree'"'"'s launcher)\n' \
            "$1" "$lineno" "$line" >&2
          return 1
        fi ;;
    esac
    for h in ${HOSTFILE_HOSTS[@]+"${HOSTFILE_HOSTS[@]}"}; do
      [ "$h" != "$host" ] || { printf 'error: %s line %d: host %s is listed twice\n' "$1" "$lineno" "$host" >&2; return 1; }
    done
    HOSTFILE_HOSTS+=("$host")
  done <"$1"
}

# The environment a launcher needs (NAME=VALUE words): Open MPI refuses to run as root unless told.
mpi_env() {
  case "$MPI_FLAVOUR" in
    mpich) MPI_ENV=() ;;
    *) MPI_ENV=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1) ;;
  esac
}

# Open MPI's shared-memory transport for training launches on one node: copy-in/copy-out through 128 KiB
# fragments instead of the kernel's single copy (CMA). Training moves one mid-sized gradient per step, where the
# kernel's page-by-page copy costs more than it saves (docs/performance.md, "Transport for training"). The
# collective benchmarks keep Open MPI's defaults: there the vendor baseline runs on its own settings. MPICH has no
# such switch: nothing.
training_shm_flags() {
  case "$MPI_FLAVOUR" in
    mpich) TRAINING_SHM_FLAGS=() ;;
    *) TRAINING_SHM_FLAGS=(--mca btl_vader_single_copy_mechanism none --mca btl_vader_max_send_size 131072) ;;
  esac
}

# MPI_Allreduce forced onto the launcher's ring algorithm, the baseline the hand-written ring is compared with.
# MPICH 4.0 has no ring allreduce (its CVAR refuses "ring"): its bandwidth-optimal reduce-scatter + all-gather
# stands in.
forced_ring_flags() {
  case "$MPI_FLAVOUR" in
    mpich) FORCED_RING=(-genv MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM reduce_scatter_allgather) ;;
    *) FORCED_RING=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4) ;;
  esac
}

# CMake's view: the flags and environment for NP ranks that share the machine with anything (ctest), as
# ;-lists. SHIM is the yield shim CMake will build for an MPICH tree (it does not exist yet at configure time).
_mpi_cmake() {
  local launcher="$1" np="$2"
  MPI_FLAVOUR="$(mpi_flavour "$launcher")" || exit 1
  MPI_YIELD_SHIM=""
  [ "$MPI_FLAVOUR" != mpich ] || MPI_YIELD_SHIM="$3"
  mpirun_flags "$np" shared
  mpi_env
  local IFS=';'
  printf 'flavour=%s\nflags=%s\nenv=%s\n' "$MPI_FLAVOUR" "${MPIRUN_FLAGS[*]}" "${MPI_ENV[*]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case "${1:-}" in
    flavour) [ $# -eq 2 ] || { echo "usage: mpi.sh flavour MPIEXEC" >&2; exit 2; }; mpi_flavour "$2" ;;
    cmake) [ $# -eq 4 ] || { echo "usage: mpi.sh cmake MPIEXEC NP SHIM" >&2; exit 2; }; _mpi_cmake "$2" "$3" "$4" ;;
    *) echo "usage: mpi.sh flavour MPIEXEC | mpi.sh cmake MPIEXEC NP SHIM" >&2; exit 2 ;;
  esac
fi
