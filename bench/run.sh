#!/usr/bin/env bash
# `make bench`: runs every bench/*.sh, each printing one line per figure.
set -u
cd "$(dirname "$0")/.."
export EMBER_ROOT=$PWD EMBER_BUILD=$PWD/build SHARED=${SHARED:-$PWD/../shared}
rc=0
for b in bench/*.sh; do
  [ "$(basename "$b")" = run.sh ] && continue
  echo "== $(basename "$b" .sh)"
  bash "$b" || { echo "bench $(basename "$b") failed"; rc=1; }
done
exit $rc
