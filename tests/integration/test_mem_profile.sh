#!/usr/bin/env bash
# Memory flame graph: a program touching N fresh pages in touch_pages() gets
# exactly N faults attributed there (one write fault per fresh 4 KiB page,
# huge pages off for the region), >= 90% of all its faults in the task.
. "$(dirname "$0")/lib.sh"
need_bpf
N=20000
# A running agent: the task is attached well within the workload's unmeasured
# first second (a private agent's start-up can take longer on a loaded machine).
start_agent
"$PROGS/mem_touch" $N > "$TMP/w.out" & W=$!; CLEANUP_PIDS+=("$W")
sleep 0.1
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$W" --type mem --duration 30s --out "$TMP/prof" >"$TMP/p.out" 2>"$TMP/p.err" \
  || { cat "$TMP/p.err"; fail "ember profile --type mem failed"; }
wait "$W"
[ -s "$TMP/prof/mem.svg" ] || fail "missing mem.svg"
total=$(folded_total "$TMP/prof/mem.folded")
touch=$(folded_sum "$TMP/prof/mem.folded" '^mem_touch;(.*;)?main;grow;touch_pages(;|$)')
echo "faults: total $total, in main;grow;touch_pages $touch, pages touched $N"
[ $(( 100 * touch / total )) -ge 90 ] || fail "only $touch of $total faults in touch_pages"
[ "$touch" = "$N" ] || fail "$touch faults in touch_pages for $N fresh pages"
ok "$touch faults in touch_pages for $N pages"
stop_agent || fail "agent exited with an error"
