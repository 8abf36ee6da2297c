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

# Open MPI refuses to run as root unless told; oversubscription is needed for more ranks than cores, and
# oversubscribed ranks must yield when idle or busy-polling starves them.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN_FLAGS=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
cores() { nproc 2>/dev/null || echo 1; }
