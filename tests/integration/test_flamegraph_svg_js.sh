#!/usr/bin/env bash
# The flame graph SVG's own script (hover, zoom, Reset zoom, search, labels),
# run by node against a minimal DOM built from the SVG; xmllint checks XML.
# Needs no root or BPF.  Skips (77) without node or the converter binary.
set -eu
cd "$(dirname "$0")/../.."
bin=${EMBER_BUILD:-build}/bench/bench_flamegraph
command -v node >/dev/null 2>&1 || { echo "SKIP: node not installed"; exit 77; }
[ -x "$bin" ] || { echo "SKIP: $bin not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'main;bar;x 2\nmain;baz 1\nmain;foo 1\nother 4\n' > "$tmp/small.folded"
"$bin" --load "$tmp/small.folded" --svg "$tmp/small.svg" --folded "$tmp/again.folded"
cmp "$tmp/small.folded" "$tmp/again.folded"
"$bin" --stacks 20000 --samples 100000 --svg "$tmp/big.svg" > /dev/null
# A stripped library's frames: one box, the folded output keeps the offsets.
printf 'main;f 5\nmain;libcrypto.so.3+0x10 1\nmain;libcrypto.so.3+0x20 3\nmain;libcrypto.so.3+0x30 1\n' > "$tmp/merged.folded"
"$bin" --load "$tmp/merged.folded" --svg "$tmp/merged.svg" --folded "$tmp/again.folded"
cmp "$tmp/merged.folded" "$tmp/again.folded"
if command -v xmllint >/dev/null 2>&1; then
  xmllint --noout "$tmp/small.svg" "$tmp/big.svg" "$tmp/merged.svg"
fi
node tests/integration/flamegraph_svg_check.js "$tmp/small.svg" "$tmp/big.svg" "$tmp/merged.svg"
