#!/usr/bin/env bash
# A portable build carries no instruction beyond plain x86-64 outside the code written for a set and chosen at
# run time: the dispatched loops (isa_detail::on_avx2/on_avx512), the byte kernels' per-set files
# (byte_kernels::), and BLIS, which chooses its own kernels at run time (bli_*). Lists every other function that
# holds a VEX or EVEX instruction (AVX and later: v-prefixed mnemonics) or a BMI/LZCNT/MOVBE one, and fails if
# there is one. tzcnt is not among them: GCC's generic tuning writes __builtin_ctz as `rep bsf` (F3 0F BC, the same
# bytes, which objdump prints as tzcnt), and a CPU without BMI runs it as bsf; libstdc++'s std::from_chars holds one,
# seen once a program parses enough numbers that the compiler keeps it out of line. (lzcnt is not bsr's twin, so it
# stays.) Usage: portable_check.sh <GRADSYNC_NATIVE value> <binary>...
set -uo pipefail
native="$1"
shift
case "$native" in ON | on | 1 | TRUE | true)
  echo "skipped: a GRADSYNC_NATIVE build is compiled for its CPU (its start-up check guards it instead)"
  exit 77 ;;
esac
command -v objdump >/dev/null || { echo "skipped: no objdump (binutils)"; exit 77; }
[ "$(uname -m)" = x86_64 ] || { echo "skipped: not an x86-64 machine"; exit 77; }
status=0
for binary in "$@"; do
  offenders=$(objdump -d --no-show-raw-insn "$binary" | awk '
    /^[0-9a-f]+ <.*>:$/ { name = $2; next }
    name != "" && $0 ~ /\t(v[a-z0-9]+|andn|bextr|blsi|blsr|blsmsk|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx|lzcnt|movbe) / {
      count[name]++ }
    END { for (n in count) print count[n], n }' |
    grep -v -e '<bli_' -e 'isa_detail[0-9]*on_avx' -e '12byte_kernels' | c++filt)
  functions=$(objdump -d --no-show-raw-insn "$binary" | grep -c '^[0-9a-f]* <.*>:$')
  if [ -n "$offenders" ]; then
    echo "portable_check: $(basename "$binary"): instructions beyond x86-64 outside the dispatched code:"
    echo "$offenders" | head -20
    status=1
  else
    echo "portable_check: $(basename "$binary"): $functions functions, none with AVX or BMI outside the dispatched code"
  fi
done
exit $status
