#!/usr/bin/env bash
# The style check: clang-format (Debian 12's, version 14) with the repository's .clang-format over every tracked
# C and C++ source (*.cpp, *.hpp, *.c, *.h). Installs clang-format if it is missing.
# Usage: scripts/format.sh [--check] [FILE...]
#   --check  change nothing: name each file whose formatting differs and exit 1 if any does (0 if none)
#   (none)   format the files in place
# FILE...    only these files (default: every tracked source file)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

check=0
files=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --check) check=1; shift ;;
    -h|--help) show_help "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) die "format.sh: unknown option '$1' (use --check, or name files)" ;;
    *) files+=("$1"); shift ;;
  esac
done

command -v clang-format >/dev/null || install_missing "the style check" clang-format
[ -f "$GRADSYNC_ROOT/.clang-format" ] || die "format.sh: no .clang-format in $GRADSYNC_ROOT"

cd "$GRADSYNC_ROOT"
if [ "${#files[@]}" -eq 0 ]; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.c' '*.h')
fi
[ "${#files[@]}" -gt 0 ] || die "format.sh: no source files to format"

if [ "$check" -eq 0 ]; then
  clang-format -i --style=file "${files[@]}"
  say "formatted ${#files[@]} file(s)"
  exit 0
fi

# --check: compare each file with clang-format's output (clang-format 14's --dry-run names only the first lines
# that differ; this names every file and how many lines of it would change).
differ=0
for f in "${files[@]}"; do
  changed="$(clang-format --style=file "$f" | diff "$f" - | grep -c '^[<>]' || true)"
  if [ "$changed" -gt 0 ]; then
    printf '%s: %s line(s) differ from .clang-format\n' "$f" "$changed"
    differ=$((differ + 1))
  fi
done
if [ "$differ" -gt 0 ]; then
  printf 'format.sh: %d of %d file(s) differ; run scripts/format.sh to format them\n' "$differ" "${#files[@]}" >&2
  exit 1
fi
say "all ${#files[@]} file(s) match .clang-format"
