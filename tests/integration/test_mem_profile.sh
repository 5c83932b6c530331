#!/usr/bin/env bash
# Memory flame graph: a program touching N fresh pages in touch_pages() gets
# exactly N faults attributed there (one write fault per fresh 4 KiB page,
# huge pages off for the region), >= 90% of all its faults in the task.
. "$(dirname "$0")/lib.sh"
need_bpf
N=20000
# A running agent; the workload touches its pages once the task is attached (profile_gated).
start_agent
EMBER_TEST_GO=$TMP/go "$PROGS/mem_touch" $N > "$TMP/w.out" & W=$!; CLEANUP_PIDS+=("$W")
profile_gated --config "$TMP/ember.yaml" --pid "$W" --type mem --duration 30s --out "$TMP/prof"
wait "$W"
[ -s "$TMP/prof/mem.svg" ] || fail "missing mem.svg"
total=$(folded_total "$TMP/prof/mem.folded")
touch=$(folded_sum "$TMP/prof/mem.folded" '^mem_touch;(.*;)?main;grow;touch_pages(;|$)')
echo "faults: total $total, in main;grow;touch_pages $touch, pages touched $N"
[ $(( 100 * touch / total )) -ge 90 ] || fail "only $touch of $total faults in touch_pages"
[ "$touch" = "$N" ] || fail "$touch faults in touch_pages for $N fresh pages"
ok "$touch faults in touch_pages for $N pages"
stop_agent || fail "agent exited with an error"
