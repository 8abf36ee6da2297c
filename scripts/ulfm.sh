#!/usr/bin/env bash
# The ULFM MPI as a component: Open MPI 5.0.7 built with User-Level Failure Mitigation (MPIX_Comm_revoke,
# MPIX_Comm_shrink, MPIX_Comm_agree) from Debian 13's source package, which bundles PMIx, PRRTE, hwloc and libevent
# and so builds on Debian 12, whose own MPIs have no working ULFM. The source comes from Debian's archive through a
# private sources list (the machine's own apt configuration is not touched); the build is installed once into a
# cached prefix and reused by every later run, by CI and by other clones on this machine.
# Usage: scripts/ulfm.sh build     the MPI (about 15 minutes on 2 cores, once) and gradsync against it in build-ulfm/
#        scripts/ulfm.sh mpi       the MPI only
#        scripts/ulfm.sh prefix    print the prefix if the MPI is installed there, else exit 1
# GRADSYNC_CACHE (default /var/cache/gradsync) holds the prefix; ULFM_BUILD_DIR (default build-ulfm) the gradsync tree.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

ULFM_VERSION=5.0.7-1
# The configure line is part of the prefix's name: another line is another build, never a half-matching one.
ULFM_CONFIGURE=(--with-ft=ulfm --disable-mpi-fortran --with-pmix=internal --with-prrte=internal
                --with-libevent=internal --with-hwloc=internal --disable-oshmem --enable-mpi1-compatibility)
CACHE="${GRADSYNC_CACHE:-/var/cache/gradsync}"
ULFM_PREFIX="$CACHE/openmpi-${ULFM_VERSION}-ulfm-$(printf '%s\n' "${ULFM_CONFIGURE[@]}" | cksum | cut -d' ' -f1)"
ULFM_BUILD="${ULFM_BUILD_DIR:-$GRADSYNC_ROOT/build-ulfm}"

# installed: the prefix holds a finished install (the stamp is written last, so an interrupted build is redone).
installed() { [ -f "$ULFM_PREFIX/.complete" ] && [ -x "$ULFM_PREFIX/bin/mpicc" ]; }

build_mpi() {
  if installed; then
    say "ULFM Open MPI $ULFM_VERSION is installed in $ULFM_PREFIX"
    return 0
  fi
  install_missing "to unpack and build Open MPI 5 from Debian's source package" dpkg-dev gcc g++ make perl \
    zlib1g-dev xz-utils ca-certificates
  as_root mkdir -p "$CACHE"
  local work
  work="$(mktemp -d "$CACHE/.ulfm-build.XXXXXX")"
  at_exit ulfm_work "rm -rf '$work'"
  # A private apt state: one deb-src line for trixie, its lists and cache in $work; signed by the keyring bookworm
  # already trusts (debian-archive-keyring carries trixie's key).
  mkdir -p "$work/apt/parts" "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
  cat >"$work/apt/parts/trixie-src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  local apt_opts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work/apt/parts"
                  -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt/cache" -o APT::Sandbox::User=root)
  say "fetching Debian's source package openmpi=$ULFM_VERSION (trixie)"
  apt-get "${apt_opts[@]}" -q update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; die "apt-get update of the trixie sources failed"; }
  (cd "$work" && apt-get "${apt_opts[@]}" -q source --download-only "openmpi=$ULFM_VERSION") >>"$work/apt.log" 2>&1 \
    || { cat "$work/apt.log" >&2; die "apt-get source openmpi=$ULFM_VERSION failed"; }
  # Upstream's tarball as it is: Debian's patches touch configure.ac and the Makefile.am files, and their newer
  # timestamps make the build re-run autotools (which need Open MPI's own autogen.pl and fail under plain make).
  (cd "$work" && dpkg-source --skip-patches -x "openmpi_${ULFM_VERSION}.dsc" src) >>"$work/apt.log" 2>&1 \
    || { cat "$work/apt.log" >&2; die "dpkg-source could not unpack openmpi_${ULFM_VERSION}.dsc"; }
  say "configuring Open MPI $ULFM_VERSION with ULFM into $ULFM_PREFIX (log: $work/build.log while it runs)"
  local jobs
  jobs="$(cores)"
  (cd "$work/src" && ./configure --prefix="$ULFM_PREFIX" "${ULFM_CONFIGURE[@]}") >"$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log" >&2; die "Open MPI's configure failed (the last 40 lines are above)"; }
  say "building Open MPI (about 15 minutes on 2 cores)"
  (cd "$work/src" && make -j "$jobs" && as_root make install) >>"$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log" >&2; die "building Open MPI failed (the last 40 lines are above)"; }
  # The whole listing first: grep -q would close the pipe early, and pipefail take ompi_info's SIGPIPE for a no.
  "$ULFM_PREFIX/bin/ompi_info" --parsable | grep -c '^options:ft_mpi_support:yes' >/dev/null \
    || die "$ULFM_PREFIX was built without ULFM (ompi_info: no ft_mpi_support)"
  as_root touch "$ULFM_PREFIX/.complete"
  say "ULFM Open MPI installed in $ULFM_PREFIX"
}

build_gradsync() {
  build_mpi
  "$GRADSYNC_ROOT/scripts/setup.sh" --no-build
  if [ ! -f "$ULFM_BUILD/CMakeCache.txt" ]; then
    say "configuring gradsync against the ULFM MPI in $ULFM_BUILD"
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    cmake -S "$GRADSYNC_ROOT" -B "$ULFM_BUILD" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
      -DMPI_C_COMPILER="$ULFM_PREFIX/bin/mpicc" -DMPI_CXX_COMPILER="$ULFM_PREFIX/bin/mpicxx" \
      -DMPIEXEC_EXECUTABLE="$ULFM_PREFIX/bin/mpirun" >/dev/null
  fi
  # What the in-place tests (ctest -L ulfm) run, not the whole tree.
  cmake --build "$ULFM_BUILD" -j "$(( $(cores) < 2 ? 1 : 2 ))" --target train bench_allreduce inplace_allreduce 2>&1 \
    | grep -E 'error|warning' >&2 || true
  [ -x "$ULFM_BUILD/bin/train" ] || die "building gradsync against the ULFM MPI failed: $ULFM_BUILD/bin/train is missing"
  ldd "$ULFM_BUILD/bin/train" | grep -q "$ULFM_PREFIX/lib/libmpi" \
    || die "$ULFM_BUILD/bin/train is not linked against $ULFM_PREFIX: $(ldd "$ULFM_BUILD/bin/train" | grep -i mpi)"
  say "gradsync built against ULFM Open MPI in $ULFM_BUILD"
}

case "${1:-}" in
  build) build_gradsync ;;
  mpi) build_mpi ;;
  prefix) installed && echo "$ULFM_PREFIX" ;;
  -h|--help|"") show_help "${BASH_SOURCE[0]}"; [ -n "${1:-}" ] ;;
  *) die "ulfm.sh: unknown command '$1' (build, mpi or prefix)" ;;
esac
