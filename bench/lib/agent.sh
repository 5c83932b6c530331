# Sourced by the benches: a private agent under $T (the caller's temporary
# directory) with the file backend, warnings only, no continuous-profiling policy
# (a busy benchmark workload would start tasks of its own); BENCH_PROFILING adds
# keys of profiling (flow mapping entries).  Sets AGENT (its pid);
# the caller's EXIT trap stops it.  Returns once the first analyzer listens.
start_bench_agent() {
  cat > "$T/ember.yaml" <<YAML
ember: { run_dir: $T/run, output_dir: $T/out, log_level: warn }
exporter: { backends: [file] }
profiling: { continuous: { policies: [] }${BENCH_PROFILING:+, $BENCH_PROFILING} }
YAML
  "$B/ember" run --config "$T/ember.yaml" > "$T/agent.log" 2>&1 & AGENT=$!
  for _ in $(seq 100); do [ -S "$T/run/analyzer/analyzer-0.ctl" ] && return 0; sleep 0.1; done
  echo "bench: the agent did not come up" >&2; cat "$T/agent.log" >&2; return 1
}
