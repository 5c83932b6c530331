#!/usr/bin/env bash
# The network and TLS integration tests on the syscall layer (EMBER_NET_ATTACH=syscall):
# where the kernel has the socket layer, the suite runs them there, and this is how the
# fallback older kernels get is held to the same checks.  Prints each test's result and
# a last line "net-syscall: P passed, F failed"; exits 1 if any failed.
set -u
cd "$(dirname "$0")/.."
export EMBER_NET_ATTACH=syscall
tests=$(grep -l -E "start_net_task|network:|tls|oap_network_task" tests/integration/test_*.sh | xargs -n1 basename | sed 's/\.sh$//' |
        grep -v -E "^test_(net_attach_path|net_raw_tp|kernel_debian12)$")
pass=0; failed=0
for t in $tests; do
  if tests/run-tests.sh --repeat 1 "$t" | grep -q "^run 1: PASS"; then
    pass=$((pass + 1)); echo "PASS  $t (syscall layer)"
  else
    failed=$((failed + 1)); echo "FAIL  $t (syscall layer): build/test-logs/$t.run1.log"
  fi
done
echo "net-syscall: $pass passed, $failed failed"
[ "$failed" = 0 ]
