#!/usr/bin/env bash
# Root never writes or chowns through a path the ember users control.  Before the
# agent starts, the ember user has planted symlinks (to root-owned "victim" files and
# directories outside ember's directories) where the supervisor writes: in an old,
# group-writable run directory (effective.yaml, supervisor.stats, agent.info, agent.lock,
# the temporary names, the socket, the unprivileged users' directories) and in the
# gala-gopher directories it prepares; between child restarts the exporter's user
# replaces a gala-gopher directory with a symlink.  No victim changes (content, owner,
# mode: hashed), the run directory ends root's alone, the configuration with its
# token is not world-readable, and an output directory reached through another user's
# symlink, or under a parent the exporter's user cannot traverse, is refused at start with
# a message naming the directory.
. "$(dirname "$0")/lib.sh"
need_bpf
command -v setpriv >/dev/null || skip "setpriv missing (util-linux)"
# The users exist from here on (the first start creates them).
start_agent; stop_agent || fail "first start failed"
AS_EMBER=(setpriv --reuid=ember --regid=ember --clear-groups)
AS_EXP=(setpriv --reuid=ember-exporter --regid=ember --clear-groups)

V=$TMP/victims; mkdir -p "$V/dir" "$V/dir2" "$V/dir3"
for i in 1 2 3 4 5 6; do echo "root's file $i" > "$V/f$i"; done
chmod 644 "$V"/f*; chmod 755 "$V/dir" "$V/dir2" "$V/dir3"
snapshot() { # content, owner and mode of every victim and of /etc/shadow
  (cd "$V" && find . -printf '%p %u:%g %m\n' | sort; sha256sum f*) ; stat -c '%n %u:%g %a %s' /etc/shadow /etc/passwd
}
before=$(snapshot)

# An old layout: the run directory group-writable by ember, and the ember user's plants in it.
AGENT_RUN=$TMP/run; rm -rf "$AGENT_RUN"; mkdir -p "$AGENT_RUN"; chown root:ember "$AGENT_RUN"; chmod 775 "$AGENT_RUN"
"${AS_EMBER[@]}" ln -s "$V/f1" "$AGENT_RUN/effective.yaml"
"${AS_EMBER[@]}" ln -s "$V/f2" "$AGENT_RUN/supervisor.stats"
"${AS_EMBER[@]}" ln -s "$V/f3" "$AGENT_RUN/agent.info"
"${AS_EMBER[@]}" ln -s "$V/f4" "$AGENT_RUN/.effective.yaml.tmp"
"${AS_EMBER[@]}" ln -s "$V/f5" "$AGENT_RUN/collector.sock"
"${AS_EMBER[@]}" ln -s "$V/f1" "$AGENT_RUN/agent.lock"
"${AS_EMBER[@]}" ln -s "$V/dir" "$AGENT_RUN/analyzer"
# gala-gopher's directories: the exporter's user made them, and left a link inside.
GG=/var/log/gala-gopher; GG_SAVED=""
if [ -e "$GG" ]; then GG_SAVED=$TMP/gg.saved; mv "$GG" "$GG_SAVED"; fi
restore_gg() { rm -rf "$GG"; [ -n "$GG_SAVED" ] && mv "$GG_SAVED" "$GG"; }
trap 'restore_gg; cleanup' EXIT
mkdir -p "$GG"; chown ember-exporter:ember "$GG"; chmod 770 "$GG"
"${AS_EXP[@]}" ln -s "$V/dir2" "$GG/stacktrace"

start_agent --set ember.rest_api.enabled=true --set ember.rest_api.port="$(free_port)" \
  --set core.backend.authentication=s3cret-token
[ "$(snapshot)" = "$before" ] || { diff <(echo "$before") <(snapshot); fail "a victim changed at start"; }
ok "no root-owned file or directory outside ember's changed at start"
[ "$(stat -c '%U:%G %a' "$AGENT_RUN")" = "root:root 755" ] || fail "run dir is $(stat -c '%U:%G %a' "$AGENT_RUN")"
for f in effective.yaml supervisor.stats agent.info agent.lock; do
  [ -f "$AGENT_RUN/$f" ] && [ ! -L "$AGENT_RUN/$f" ] || fail "$f is not a regular file of its own"
done
[ "$(stat -c '%U:%G %a' "$AGENT_RUN/effective.yaml")" = "root:ember 640" ] || fail "effective.yaml is $(stat -c '%U:%G %a' "$AGENT_RUN/effective.yaml")"
grep -q s3cret-token "$AGENT_RUN/effective.yaml" || fail "the token did not reach the agent's configuration"
[ -d "$AGENT_RUN/analyzer" ] && [ ! -L "$AGENT_RUN/analyzer" ] || fail "the analyzer's directory is still a link"
[ "$(stat -c '%U %a' "$AGENT_RUN/analyzer")" = "ember 750" ] || fail "analyzer dir is $(stat -c '%U %a' "$AGENT_RUN/analyzer")"
[ "$(stat -c '%U %a' "$AGENT_OUT")" = "ember-exporter 770" ] || fail "output dir is $(stat -c '%U %a' "$AGENT_OUT")"
grep -q "gala-gopher/stacktrace for the REST API" "$TMP/agent.log" || fail "the planted gala-gopher link was not reported"
ok "run dir root's 0755, effective.yaml root:ember 0640 with the token, planted links replaced or refused"
"$EMBER" run --config "$TMP/ember.yaml" --set core.backend.authentication=s3cret-token --dump-config > "$TMP/dump"
grep -q 's3cret-token' "$TMP/dump" && fail "--dump-config prints the token"
grep -q 'authentication: "<redacted>"' "$TMP/dump" || fail "--dump-config does not say the token is redacted"
ok "--dump-config redacts the token"

# Between restarts: ember cannot plant in root's directory any more; the exporter's user
# swaps a gala-gopher directory for a link; the collector and an analyzer are killed.
if "${AS_EMBER[@]}" ln -s "$V/f6" "$AGENT_RUN/supervisor.stats.new" 2>/dev/null; then fail "ember can write the run dir"; fi
rm -rf "$GG/flamegraph"; "${AS_EXP[@]}" ln -s "$V/dir3" "$GG/flamegraph"
kill -9 "$(child_pid ember-analyzer)"
for _ in $(seq 50); do grep -q "restarting analyzer" "$TMP/agent.log" && break; sleep 0.1; done
kill -9 "$(child_pid ember-collector)"
for _ in $(seq 100); do [ "$(grep -c 'started collector' "$TMP/agent.log")" -ge 2 ] && break; sleep 0.1; done
[ "$(grep -c 'started collector' "$TMP/agent.log")" -ge 2 ] || { cat "$TMP/agent.log"; fail "the collector was not restarted"; }
sleep 1
stop_agent || fail "agent exited with an error"
[ "$(snapshot)" = "$before" ] || { diff <(echo "$before") <(snapshot); fail "a victim changed across restarts"; }
ok "no victim changed across an analyzer's and the collector's restarts"

# An output directory behind the ember user's symlink: refused, by name.
mkdir -p "$TMP/emberdir"; chown ember "$TMP/emberdir"
"${AS_EMBER[@]}" ln -s "$V/dir3" "$TMP/emberdir/out"
"$EMBER" run --config "$TMP/ember.yaml" --set ember.output_dir="$TMP/emberdir/out" >"$TMP/refused.log" 2>&1 &
p=$!; CLEANUP_PIDS+=("$p")
for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
kill -0 "$p" 2>/dev/null && fail "the agent started with an output directory behind another user's symlink"
grep -q "emberdir/out.*symlink another user owns" "$TMP/refused.log" || { cat "$TMP/refused.log"; fail "the refusal does not name the directory and why"; }
[ "$(snapshot)" = "$before" ] || fail "a victim changed"
ok "an output directory through another user's symlink is refused: $(grep -o 'output directory:.*' "$TMP/refused.log" | head -1)"

# An output directory under a parent the exporter's user cannot traverse (root's 0700):
# refused at start, naming that parent (root can reach it; the exporter cannot).
mkdir -p "$TMP/closed"; chmod 700 "$TMP/closed"
"$EMBER" run --config "$TMP/ember.yaml" --set ember.output_dir="$TMP/closed/out" >"$TMP/closed.log" 2>&1 &
p=$!; CLEANUP_PIDS+=("$p")
for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
kill -0 "$p" 2>/dev/null && { cat "$TMP/closed.log"; fail "the agent started with an output directory its exporter cannot reach"; }
wait "$p" && fail "ember run exited 0 with an output directory its exporter cannot reach"
grep -q "the exporter's user 'ember-exporter' cannot traverse '$TMP/closed' (root:root 0700" "$TMP/closed.log" \
  || { cat "$TMP/closed.log"; fail "the refusal does not name the directory that cannot be traversed"; }
grep -q "agent running" "$TMP/closed.log" && fail "it said 'agent running' first"
ok "an output directory under a parent the exporter cannot traverse is refused: $(grep -o 'output directory .*' "$TMP/closed.log" | head -1)"
