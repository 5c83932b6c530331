#!/usr/bin/env bash
# Symbolizer: addresses resolved/s cold and warm on large binaries, and start-up
# (new symbolizer -> first name) beside `llvm-symbolizer` (cold and warm) and
# `addr2line -f -C` on the same addresses in the same run; module load time;
# memory per cached module; kallsyms load.  Targets: /usr/bin/node if
# installed, and the largest libLLVM shared library (else the largest ELF
# under /usr/lib/x86_64-linux-gnu).  Set SYM_BENCH_FILES to override.
#
# Like with like: ember names functions from the symbol tables, while the
# peers read DWARF (line tables, inlined frames) when a file has it, which is
# more work.  Every tool is therefore run on a copy of each file with its
# debug sections removed (objcopy --strip-debug keeps .symtab and .dynsym),
# so all three do the same job: symbol tables only.
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
T=$(mktemp -d /tmp/ember-symbench.XXXXXX); trap 'rm -rf "$T"' EXIT
copies=""
for f in $files; do
  c="$T/$(basename "$f")"
  objcopy --strip-debug "$f" "$c" || { echo "symbolizer: cannot strip a copy of $f"; exit 1; }
  echo "symbolizer_file: $(basename "$f") ($(( $(stat -c %s "$f") / 1048576 )) MiB, $(( $(stat -c %s "$c") / 1048576 )) MiB without debug sections)"
  copies="$copies $c"
done
# shellcheck disable=SC2086
"$B" -n "${SYM_BENCH_ADDRS:-20000}" $copies
