#!/usr/bin/env bash
# The whole test suite against all three databases, from a fresh Debian 12 machine:
#   1. installs the build tools, client libraries and database servers it needs (apt-get);
#   2. builds with the "ci" preset (warnings are errors), the "asan" preset (ASan+UBSan) and the
#      "tsan" preset (ThreadSanitizer: the lease keeper, the waiter queue and the listener);
#   3. starts throwaway PostgreSQL 15 and MariaDB 10.11 on 127.0.0.1 (tools/testdb.sh, with a
#      wall clock the clock tests can step) and runs every test on SQLite, PostgreSQL and
#      MariaDB for each build; stops the servers after;
#   4. builds with only the SQLite backend while every PostgreSQL/MySQL client file is hidden
#      (tests/sqlite_only), and builds, installs with apt, checks and removes the Debian
#      packages (tests/packages);
#   5. runs the torture smoke on the ci build (tools/torture/run.sh --smoke: every backend x
#      strategy with client kills and a server crash, the no-fault mode, both negative
#      controls; it starts servers of its own). A violation fails the run;
#   6. runs the failover torture on the ci build (tools/torture/run.sh --failover --runs 5: a
#      PostgreSQL primary + synchronous standby, its primary crashed and the standby promoted
#      under load, every strategy, 5 times in a row, ~3.5 minutes);
#   7. runs the replicated-database tests on the ci build (tests/replication/run.sh): real
#      clusters from Debian packages on 127.0.0.1 (PostgreSQL primary + synchronous standby
#      with a failover, PgBouncer in transaction mode, 3-node Galera), started and stopped by
#      tools/cluster/ (~1 minute).
# A backend that cannot be started fails the run; nothing is skipped.
#   tools/test-all.sh            everything
#   tools/test-all.sh --quick    only the ci build
set -euo pipefail
cd "$(dirname "$0")/.."

presets=(ci asan tsan)
[[ ${1:-} == --quick ]] && presets=(ci)

packages=(g++ cmake make pkg-config libpqxx-dev libpq-dev libmysqlcppconn-dev libboost-dev
          libsqlite3-dev nlohmann-json3-dev doctest-dev postgresql-15 mariadb-server mariadb-client
          faketime
          pgbouncer galera-4 rsync iproute2   # the replicated setups of tools/cluster/
          python3-yaml   # python3-yaml: the alert rules are parsed when promtool is missing
          doxygen        # doxygen: the api_docs test (an undocumented public declaration fails)
          scdoc groff-base man-db  # the sqlock(1) page: scdoc builds it, groff checks it renders
          lintian)       # lintian: the Debian packages are checked
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "test-all: installing ${missing[*]}"
    if [[ $EUID -ne 0 ]]; then
        echo "test-all: run as root (or install these packages first): ${missing[*]}" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# The servers run as the unprivileged postgres/mysql users when we are root; they keep their data
# under the build tree unless that tree is unreachable for them (a checkout under /root, say).
testdb_dir() {
    local dir="$PWD/build/$1/testdb"
    if [[ $EUID -eq 0 ]] && ! runuser -u postgres -- test -x "$PWD/build" 2>/dev/null; then
        dir=$(mktemp -d /tmp/sqlock-testdb.XXXXXX)
        chmod 755 "$dir"
    fi
    echo "$dir"
}

status=0
for preset in "${presets[@]}"; do
    echo "=== build: $preset"
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset" -j "$(nproc)"
    echo "=== test: $preset (SQLite, PostgreSQL, MariaDB)"
    mkdir -p "build/$preset"
    # The servers run with a steppable wall clock (offset file next to their directory), for
    # the tests that step it (SQLOCK_TEST_CLOCK_FILE); it stays at +0 otherwise.
    dir=$(testdb_dir "$preset")
    TESTDB_FAKETIME_FILE="$dir-clock" tools/testdb.sh run "$dir" -- ctest --preset "$preset" ||
        status=1
done
echo "=== SQLite only: a build with no PostgreSQL or MySQL client file on the machine"
tests/sqlite_only/run.sh . build/sqlite-only || status=1
echo "=== Debian packages: built, installed with apt, run, built against, removed"
tests/packages/run.sh . || status=1
echo "=== torture smoke (ci build)"
tools/torture/run.sh --smoke --build build/ci || status=1
echo "=== torture across a PostgreSQL failover, 5 runs (ci build)"
tools/torture/run.sh --failover --runs 5 --build build/ci || status=1
echo "=== replicated databases (ci build): standby, failover, PgBouncer, Galera"
tests/replication/run.sh . build/ci || status=1
exit $status
