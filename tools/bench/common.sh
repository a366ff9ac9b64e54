# Shared by the run_*.sh benchmark scripts (sourced, not run).
#   bench_enter SELF TARGET TESTDB_NAME [ARGS...]
# Outside the servers: builds the release preset's TARGET, then re-runs SELF with --inner under
# tools/testdb.sh (throwaway PostgreSQL + MariaDB). Inside (--inner): checks the server URLs and
# returns, leaving ROOT, BUILD and OUT set for the caller.
# shellcheck shell=bash
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD="$ROOT/build/release"
OUT="$BUILD/bench"

bench_enter() {
  local self=$1 target=$2 testdb=$3
  shift 3
  if [[ ${1:-} != --inner ]]; then
    cd "$ROOT" || exit 1
    cmake --preset release -DSQLOCK_BUILD_BENCH=ON >/dev/null
    cmake --build --preset release --target "$target" -- --no-print-directory >/dev/null
    exec "$ROOT/tools/testdb.sh" run "$BUILD/$testdb" -- "$self" --inner
  fi
  : "${SQLOCK_TEST_POSTGRES_URL:?run me without --inner}" "${SQLOCK_TEST_MYSQL_URL:?}"
  mkdir -p "$OUT"
}
