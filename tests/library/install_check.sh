#!/usr/bin/env bash
# The installed library as a user gets it: `cmake --install` into a scratch prefix, then the example project
# (examples/allreduce, copied out of the source tree first) configured with CMAKE_PREFIX_PATH and built against the
# shared and the static library, and once more with plain g++ and `pkg-config gradsync`; each binary runs under the
# launcher on 2 ranks and must print that its sums are right. No include path may point into the source or build
# tree: the installed headers must be enough.
# Usage: install_check.sh <build dir> <mpicc> [--break]   (--break installs without one public header: must fail)
set -uo pipefail
build="$(realpath "$1")"
mpicc="$2"
source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$source_dir/scripts/mpi.sh"
fail() {
  echo "install_check: $*" >&2
  exit 1
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || fail "cmake --install failed: $(cat "$work/install.log")"
[ "${3:-}" != --break ] || rm "$prefix/include/gradsync/collectives/dtype.hpp"
for f in lib/libgradsync.so lib/libgradsync.a include/gradsync/gradsync.hpp include/gradsync/version.hpp \
  lib/cmake/gradsync/gradsyncConfig.cmake lib/pkgconfig/gradsync.pc; do
  [ -e "$prefix/$f" ] || fail "$prefix/$f was not installed"
done
# The soname carries the 0.x version: 0.1's ABI is not 0.2's.
soname="$(objdump -p "$prefix/lib/libgradsync.so" | awk '$1 == "SONAME" { print $2 }')"
[[ $soname =~ ^libgradsync\.so\.0\.[0-9]+$ ]] || fail "soname '$soname' is not libgradsync.so.0.<minor>"

cp -r "$source_dir/examples/allreduce" "$work/example"
test_launcher "$build/bin" 2 || fail "cannot tell which MPI launches $build"
mpirun_+=(-n 2)
check_run() {  # <binary> <what>
  local out
  out="$("${mpirun_[@]}" "$1" 2>&1)" || fail "$2: the example failed: $out"
  grep -q "2 ranks, sums right" <<<"$out" || fail "$2: unexpected output: $out"
  echo "$2: $out"
}
for target in gradsync::gradsync gradsync::gradsync_static; do
  dir="$work/build-${target#gradsync::}"
  cmake -S "$work/example" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" -DMPI_C_COMPILER="$mpicc" \
    -DGRADSYNC_TARGET="$target" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$work/configure.log" 2>&1 \
    || fail "configuring the example against $prefix failed: $(cat "$work/configure.log")"
  cmake --build "$dir" >"$work/build.log" 2>&1 || fail "building the example ($target) failed: $(cat "$work/build.log")"
  ! grep -q -e "$source_dir" -e "$build" "$dir/compile_commands.json" \
    || fail "the example's compile command reaches into the source or build tree: $(cat "$dir/compile_commands.json")"
  check_run "$dir/allreduce_example" "CMake, $target"
done
# pkg-config, with the MPI compiler's own flags coming through the file's Requires.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags="$(pkg-config --cflags --libs gradsync)" || fail "pkg-config gradsync failed"
# shellcheck disable=SC2086  # the flags are words
g++ -std=c++20 -o "$work/example_pc" "$work/example/main.cpp" $flags 2>"$work/pc.log" \
  || fail "g++ with pkg-config's flags ($flags) failed: $(cat "$work/pc.log")"
check_run "$work/example_pc" "pkg-config"
