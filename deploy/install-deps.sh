#!/bin/sh
# Installs ember's dependencies from Debian's registry.
#
#   deploy/install-deps.sh agent   what building and running the agent needs (make run)
#   deploy/install-deps.sh test    that, and the test and benchmark fixtures: real servers,
#                                  clients, compilers for test programs, the kernel matrix
#                                  (make test, make bench, make soak, make test-kernels)
#
# Idempotent: skips apt entirely when every package is already present.  Fixture servers
# this script installs are neither started on install nor left enabled at boot (a test starts
# its own, on its own ports); servers that were installed before are left as they were.
set -eu
MODE=${1:-}
case "$MODE" in
  agent|test) ;;
  *) echo "usage: deploy/install-deps.sh agent|test (agent: build and run ember; test: also the test fixtures)" >&2; exit 2;;
esac

# ---- the agent: build (C, BPF, protobuf) and run time ---------------------------------------
PKGS="build-essential clang llvm lld libbpf-dev bpftool libelf-dev zlib1g-dev libzstd-dev \
 liburing-dev libzmq3-dev libprotobuf-c-dev protobuf-c-compiler libjemalloc-dev \
 libyaml-dev libcap-dev libpcap-dev libmicrohttpd-dev libjson-c-dev pkg-config binutils procps passwd"
PKGS="$PKGS libgnutls28-dev libiberty-dev"         # REST API client certificates; C++/Rust demangling
PKGS="$PKGS libcurl4-openssl-dev librdkafka-dev"   # Pyroscope output (HTTP ingest), Kafka output
PKGS="$PKGS libgrpc-dev"                           # SkyWalking output: gRPC core, loaded at run time
PKGS="$PKGS libdebuginfod-dev"                     # optional debuginfod lookups, loaded at run time
PKGS="$PKGS openjdk-17-jdk-headless"               # the JVMTI agent's headers (jvm/); Java tests' javac and JVM

# ---- tests, benchmarks, the kernel matrix ----------------------------------------------------
FIXTURES="libcmocka-dev libclang-rt-14-dev linux-perf tshark"  # unit tests, fuzzers (libFuzzer), perf beside ember, the pcap oracle
FIXTURES="$FIXTURES libxml2-utils nodejs"                       # xmllint, node: flamegraph SVG XML and script tests
FIXTURES="$FIXTURES prometheus python3-zmq curl"                # promtool + a real scraper, a ZeroMQ pusher
FIXTURES="$FIXTURES bpftrace"                                   # make bench: the peer tracer measured beside ember
FIXTURES="$FIXTURES python3-grpcio python3-grpc-tools python3-protobuf"  # the test OAP receiver
FIXTURES="$FIXTURES rustc openssl util-linux golang-go"         # Rust demangling fixture; TLS test certificates; setpriv; Go test binaries
# Network profiling tests: real servers and clients, each started by the tests on their own ports
FIXTURES="$FIXTURES nginx-light wrk redis-server redis-tools mariadb-server mariadb-client postgresql postgresql-client"
FIXTURES="$FIXTURES dnsmasq-base dnsutils nghttp2-server nghttp2-client"
FIXTURES="$FIXTURES android-libboringssl-dev"  # TLS capture test: a real BoringSSL (Android's libssl.so.0)
FIXTURES="$FIXTURES python3.11-dbg gdb"  # Python frames: the interpreter's debug information, read by gdb to check ember's layouts
FIXTURES="$FIXTURES qemu-system-x86 busybox-static xz-utils mount"  # the kernel matrix (tests/kernels/); mount: test_container_overlay
# The fixtures' packaged services: never started by the install, not enabled at boot.
FIXTURE_SERVICES="nginx redis-server mariadb postgresql prometheus"

[ "$MODE" = test ] && PKGS="$PKGS $FIXTURES"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps ($MODE): installing:$missing"
# Services present before this install are the machine's own: their boot setting is kept.
had=""
for s in $FIXTURE_SERVICES; do
  if [ -e "/lib/systemd/system/$s.service" ] || [ -e "/etc/init.d/$s" ]; then had="$had $s"; fi
done
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
norc=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && norc=1
fi
apt-get install -y -qq --no-install-recommends $missing
if [ -n "$norc" ]; then rm -f /usr/sbin/policy-rc.d; fi
[ "$MODE" = test ] || exit 0
now=""
for s in $FIXTURE_SERVICES; do
  case " $had " in *" $s "*) continue;; esac
  [ -e "/lib/systemd/system/$s.service" ] || [ -e "/etc/init.d/$s" ] || continue
  systemctl --root=/ --quiet disable "$s.service" 2>/dev/null || true
  if [ -e "/etc/init.d/$s" ]; then update-rc.d "$s" disable >/dev/null 2>&1 || true; fi
  if systemctl --root=/ --quiet is-enabled "$s.service" 2>/dev/null; then
    echo "install-deps: $s.service is still enabled at boot" >&2; exit 1
  fi
  now="$now $s"
done
[ -z "$now" ] || echo "install-deps: fixture services installed now, disabled at boot:$now"
