#!/usr/bin/env bash
# One short run of a benchmark, for the test command (the bench.* tests of
# tools/bench/CMakeLists.txt):
#
#   tools/bench/smoke.sh SCRATCH PROGRAM [ARG...]
#
# In the arguments, @postgresql@ and @mysql@ stand for the test servers' URLs
# ($SQLOCK_TEST_POSTGRES_URL, $SQLOCK_TEST_MYSQL_URL, as tools/testdb.sh sets them; a missing
# one FAILS the test, it is never skipped) and @scratch@ for SCRATCH, emptied first (SQLite
# files, outputs). The benchmark's exit status is the test's.
set -euo pipefail
scratch=${1:?usage: smoke.sh SCRATCH PROGRAM [ARG...]}
shift
(($#)) || { echo "usage: smoke.sh SCRATCH PROGRAM [ARG...]" >&2; exit 2; }
rm -rf "$scratch"
mkdir -p "$scratch"

need() { # need VARIABLE: fails the test when the server URL it names is missing
  [[ -n ${!1:-} ]] && return
  echo "smoke: $1 is not set: run the tests under tools/testdb.sh (tools/test-all.sh does)" >&2
  exit 1
}
args=()
for a in "$@"; do
  if [[ $a == *@postgresql@* ]]; then
    need SQLOCK_TEST_POSTGRES_URL
    a=${a//@postgresql@/$SQLOCK_TEST_POSTGRES_URL}
  fi
  if [[ $a == *@mysql@* ]]; then
    need SQLOCK_TEST_MYSQL_URL
    a=${a//@mysql@/$SQLOCK_TEST_MYSQL_URL}
  fi
  args+=("${a//@scratch@/$scratch}")
done
exec "${args[@]}"
