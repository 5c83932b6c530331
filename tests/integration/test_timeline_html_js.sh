#!/usr/bin/env bash
# The thread timeline page's own script (lanes, hover, zoom, pan, reset, the
# per-thread summary), run by node against a minimal DOM built from the page;
# the page is made by bench_timeline from JSON lines and from synthetic events.
# Needs no root or BPF.  Skips (77) without node or the driver binary.
set -eu
cd "$(dirname "$0")/../.."
bin=${EMBER_BUILD:-build}/bench/bench_timeline
command -v node >/dev/null 2>&1 || { echo "SKIP: node not installed"; exit 77; }
[ -x "$bin" ] || { echo "SKIP: $bin not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Two processes, three threads, every type, an event still running at the end,
# an event far under a pixel wide, and a thread whose comm and a file path are hostile (@FF@: a raw 0xff byte).
cat > "$tmp/small.jsonl.in" <<'EOF'
{"tid":100,"tgid":100,"thread_comm":"web-main","proc_name":"web","name":"oncpu","type":"oncpu","start_ns":1714564800000000000,"end_ns":1714564801000000000,"duration_ns":800000000,"count":1,"stack":"main;loop;work"}
{"tid":100,"tgid":100,"thread_comm":"web-main","proc_name":"web","name":"read","type":"file","start_ns":1714564801000000000,"end_ns":1714564801500000007,"duration_ns":300000000,"count":12,"stack":"main;loop;read_config;read","file_path":"/etc/passwd"}
{"tid":100,"tgid":100,"thread_comm":"web-main","proc_name":"web","name":"futex","type":"lock","start_ns":1714564801500000000,"end_ns":1714564802500000000,"duration_ns":900000000,"count":3,"stack":"main;loop;lock","futex_op":"wait"}
{"tid":101,"tgid":100,"thread_comm":"web-io","proc_name":"web","name":"send","type":"net","start_ns":1714564800200000000,"end_ns":1714564800900000000,"duration_ns":500000000,"count":40,"sock_conn":"10.0.0.1:5000 -> 10.0.0.2:80"}
{"tid":101,"tgid":100,"thread_comm":"web-io","proc_name":"web","name":"sched_switch","type":"sched","start_ns":1714564801000000000,"end_ns":1714564803000000000,"duration_ns":1500000000,"count":9}
{"tid":101,"tgid":100,"thread_comm":"web-io","proc_name":"web","name":"fsync","type":"file","start_ns":1714564802500000000,"end_ns":1714564803900000000,"duration_ns":1000000000,"count":1,"ongoing":true}
{"tid":201,"tgid":200,"thread_comm":"</script><script>alert(1)</script>","proc_name":"db","name":"write","type":"file","start_ns":1714564800000000000,"end_ns":1714564804000000000,"duration_ns":2000000000,"count":5,"stack":"x;y","file_path":"a\"b\\c\nd\u0001</script>@FF@"}
{"tid":201,"tgid":200,"thread_comm":"</script><script>alert(1)</script>","proc_name":"db","name":"oncpu","type":"oncpu","start_ns":1714564803000000000,"end_ns":1714564803500000000,"duration_ns":500000000,"count":1}
{"tid":201,"tgid":200,"thread_comm":"</script><script>alert(1)</script>","proc_name":"db","name":"close","type":"net","start_ns":1714564803600000000,"end_ns":1714564803600001000,"duration_ns":1000,"count":1,"sock_conn":"10.0.0.3:6000 -> 10.0.0.4:5432"}
{"tid":100,"tgid":100,"thread_comm":"web-main","proc_name":"web","name":"oncpu","type":"oncpu","start_ns":1714564802000000000,"end_ns":1714564802100000000,"duration_ns":100000000,"count":1}
EOF
sed 's/@FF@/\xff/' "$tmp/small.jsonl.in" > "$tmp/small.jsonl"
"$bin" --load "$tmp/small.jsonl" --html "$tmp/small.html" --title 'timeline <check> & "test"' > "$tmp/load.out"
grep -q '^events: 10 dropped: 0 invalid: 0 threads: 3 bad_lines: 0$' "$tmp/load.out" || { cat "$tmp/load.out"; exit 1; }
grep -q '<title>timeline &lt;check&gt; &amp; &quot;test&quot;</title>' "$tmp/small.html"
"$bin" --threads 50 --events 200000 --html "$tmp/big.html"
"$bin" --threads 5 --events 1000 --max-events 600 --html "$tmp/dropped.html" > /dev/null
node tests/integration/timeline_html_check.js "$tmp/small.html" "$tmp/small.jsonl" "$tmp/big.html" "$tmp/dropped.html"
