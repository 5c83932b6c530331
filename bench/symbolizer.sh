#!/usr/bin/env bash
# Symbolizer: addresses resolved/s cold and warm on large binaries, and start-up
# (new symbolizer -> first name) beside `llvm-symbolizer` (cold and warm) and
# `addr2line -f -C` on the same addresses in the same run; module load time;
# memory per cached module; kallsyms load.  Targets: /usr/bin/node if
# installed, and the largest libLLVM shared library (else the largest ELF
# under /usr/lib/x86_64-linux-gnu).  Set SYM_BENCH_FILES to override.
set -u
B=${EMBER_BUILD:-build}/bench/bench_symbolizer
if [ ! -x "$B" ]; then
  echo "symbolizer: SKIP: $B not built"
  exit 0
fi
files=${SYM_BENCH_FILES:-}
if [ -z "$files" ]; then
  [ -x /usr/bin/node ] && files=/usr/bin/node
  big=$(ls -S /usr/lib/x86_64-linux-gnu/libLLVM-*.so.* 2>/dev/null | head -1)
  if [ -z "$big" ]; then
    big=$(find /usr/lib/x86_64-linux-gnu -maxdepth 1 -type f -name '*.so*' -size +1M -printf '%s %p\n' 2>/dev/null |
          sort -rn | awk '{print $2}' | while read -r f; do
            head -c 4 "$f" | grep -q 'ELF' && { echo "$f"; break; }
          done)
  fi
  [ -n "$big" ] && files="$files $big"
fi
if [ -z "$files" ]; then
  echo "symbolizer: SKIP: no large ELF found"
  exit 0
fi
# shellcheck disable=SC2086
exec "$B" -n "${SYM_BENCH_ADDRS:-20000}" $files
