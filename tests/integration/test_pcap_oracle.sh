#!/usr/bin/env bash
# L7 parsers against real captures: for every capture under
# $SHARED/testdata/pcap/<protocol>/, `ember analyze-pcap --json` must find the
# same exchanges as oracle.sh (tshark), with latencies within 1 ms, and at
# least the pairs MANIFEST.md lists - see tests/pcap_compare.py.  Needs no BPF
# and no root.  A capture whose protocol has no parser (NOPARSER) or that
# `ember analyze-pcap` cannot read fails; listed tshark exceptions are printed.
set -u
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-../shared}
EMBER=${EMBER:-${EMBER_BUILD:-build}/ember}
PCAPS="$SHARED/testdata/pcap"

[ -d "$PCAPS" ] || { echo "SKIP: no captures at $PCAPS"; exit 77; }
command -v tshark >/dev/null || { echo "SKIP: tshark not installed (deploy/install-deps.sh installs it)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
[ -x "$EMBER" ] || { echo "SKIP: $EMBER not built (make programs)"; exit 77; }
exec python3 tests/pcap_compare.py --ember "$EMBER" --pcap-dir "$PCAPS"
