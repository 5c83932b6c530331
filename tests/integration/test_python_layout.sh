#!/usr/bin/env bash
# The CPython layout ember sends for Debian's python3.11 (analyzer/python/
# py_layout.c, through the finder: tests/progs/py_layout_dump) is the one the
# interpreter's own debug information (python3.11-dbg, matched by build id)
# gives, field by field (gdb reads the offsets); and the finder's _PyRuntime
# is the symbol's own, Py_Version's value the interpreter's sys.hexversion.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3.11
command -v gdb >/dev/null || fail "gdb not installed (deploy/install-deps.sh installs it)"
[ -x "$PY" ] || fail "$PY missing (python3 is in deploy/install-deps.sh)"
bid=$(readelf -n "$PY" | awk '/Build ID/ {print $3}')
DBG=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
[ -r "$DBG" ] || fail "no debug information for $PY (build id $bid): python3.11-dbg of the same version is in deploy/install-deps.sh"
"$PROGS/py_layout_dump" "$PY" > "$TMP/ember.txt" || fail "py_layout_dump $PY failed ($?)"
cat > "$TMP/q.gdb" <<'GDB'
printf "rt_interp_head %d\n", (long)&((_PyRuntimeState *)0)->interpreters.head
printf "is_threads_head %d\n", (long)&((PyInterpreterState *)0)->threads.head
printf "ts_next %d\n", (long)&((PyThreadState *)0)->next
printf "ts_native_tid %d\n", (long)&((PyThreadState *)0)->native_thread_id
printf "ts_cframe %d\n", (long)&((PyThreadState *)0)->cframe
printf "cf_current %d\n", (long)&((_PyCFrame *)0)->current_frame
printf "fr_code %d\n", (long)&((struct _PyInterpreterFrame *)0)->f_code
printf "fr_previous %d\n", (long)&((struct _PyInterpreterFrame *)0)->previous
printf "fr_entry %d\n", (long)&((struct _PyInterpreterFrame *)0)->is_entry
printf "co_filename %d\n", (long)&((PyCodeObject *)0)->co_filename
printf "co_qualname %d\n", (long)&((PyCodeObject *)0)->co_qualname
printf "co_firstlineno %d\n", (long)&((PyCodeObject *)0)->co_firstlineno
printf "str_state %d\n", (long)&((PyASCIIObject *)0)->state
printf "str_ascii_data %d\n", (long)sizeof(PyASCIIObject)
printf "str_compact_data %d\n", (long)sizeof(PyCompactUnicodeObject)
printf "runtime_vaddr 0x%lx\n", (long)&_PyRuntime
GDB
gdb -q -batch -nx -x "$TMP/q.gdb" "$DBG" > "$TMP/dwarf.txt" 2> "$TMP/gdb.err" ||
  { cat "$TMP/gdb.err"; fail "gdb could not read $DBG"; }
n=0
while read -r k v; do
  e=$(awk -v k="$k" '$1 == k {print $2}' "$TMP/ember.txt")
  [ -n "$e" ] || fail "py_layout_dump gives no $k"
  [ "$((e))" = "$((v))" ] || fail "$k: ember has $e, the debug information $v"
  n=$((n + 1))
done < "$TMP/dwarf.txt"
[ "$n" = 16 ] || { cat "$TMP/dwarf.txt" "$TMP/gdb.err"; fail "gdb answered $n of 16 fields"; }
# Py_Version's value (read from the file, not the target) is the interpreter's own sys.hexversion.
hv=$("$PY" -c 'import sys; print(sys.hexversion)')
[ "$(( $(awk '$1 == "version" {print $2}' "$TMP/ember.txt") ))" = "$hv" ] || fail "Py_Version read as $(awk '$1 == "version" {print $2}' "$TMP/ember.txt"), sys.hexversion is $hv"
ok "python3.11 $(awk '$1 == "version" {print $2}' "$TMP/ember.txt"): 15 offsets and _PyRuntime as its debug information says, Py_Version its sys.hexversion"
