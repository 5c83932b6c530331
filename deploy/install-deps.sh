#!/bin/sh
# Installs ember's build, run and test dependencies from Debian's registry.
# Idempotent: skips apt entirely when every package is already present.
set -eu
PKGS="build-essential clang llvm lld libbpf-dev bpftool linux-perf libelf-dev zlib1g-dev libzstd-dev \
 liburing-dev libzmq3-dev libprotobuf-c-dev protobuf-c-compiler libjemalloc-dev \
 libyaml-dev libcmocka-dev libcap-dev libpcap-dev libmicrohttpd-dev libjson-c-dev \
 libclang-rt-14-dev pkg-config binutils tshark procps passwd"
PKGS="$PKGS libxml2-utils nodejs"  # xmllint, node: flamegraph SVG XML and script tests
PKGS="$PKGS prometheus python3-zmq curl"  # promtool + a real scraper, a ZeroMQ pusher: Prometheus backend test
PKGS="$PKGS bpftrace"  # make bench: the peer tracer measured beside ember in the same run
PKGS="$PKGS libgrpc-dev python3-grpcio python3-grpc-tools python3-protobuf"  # SkyWalking backend: gRPC core C API; the test OAP receiver
PKGS="$PKGS libcurl4-openssl-dev librdkafka-dev"  # Pyroscope output (HTTP ingest), Kafka output (and its mock cluster for tests)
PKGS="$PKGS libgnutls28-dev"  # REST API with ssl_auth: client certificates checked through libmicrohttpd's GnuTLS session
PKGS="$PKGS rustc openssl util-linux"  # symbolizer: Rust demangling fixture; TLS test certificates; setpriv
PKGS="$PKGS libiberty-dev golang-go libdebuginfod-dev"  # symbolizer: C++/Rust demangling, stripped Go test binaries, optional debuginfod
# Network profiling tests: real servers and clients, each started by the tests on their own ports
PKGS="$PKGS nginx-light wrk redis-server redis-tools mariadb-server mariadb-client postgresql postgresql-client"
PKGS="$PKGS dnsmasq-base dnsutils nghttp2-server nghttp2-client"
PKGS="$PKGS android-libboringssl-dev"  # TLS capture test: a real BoringSSL (Android's libssl.so.0) under tests/progs/bssl_peer
PKGS="$PKGS qemu-system-x86 busybox-static xz-utils mount"  # the kernel matrix (tests/kernels/): Debian's kernels under qemu; mount: test_container_overlay
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
# The servers above are test fixtures: their packaged services must not start on install.
norc=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && norc=1
fi
apt-get install -y -qq --no-install-recommends $missing
if [ -n "$norc" ]; then rm -f /usr/sbin/policy-rc.d; fi
