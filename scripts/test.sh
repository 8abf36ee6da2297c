#!/usr/bin/env bash
# The test command: installs what is missing, builds, fetches MNIST, runs the suite (ctest runs doctest under
# mpirun -n 4). Extra arguments go to ctest, e.g. scripts/test.sh -L cluster
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
"$GRADSYNC_ROOT/scripts/setup.sh"
"$GRADSYNC_ROOT/scripts/fetch_mnist.sh"
cd "$BUILD_DIR"
ctest --output-on-failure "$@"
