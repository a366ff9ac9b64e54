#!/usr/bin/env bash
# The whole test suite against all three databases, from a fresh Debian 12 machine:
#   1. installs the build tools, client libraries and database servers it needs (apt-get);
#   2. builds with the "ci" preset (warnings are errors), the "asan" preset (ASan+UBSan) and the
#      "tsan" preset (ThreadSanitizer: the lease keeper, the waiter queue and the listener),
#      through ccache (a clone in another folder hits the same cache); then the previous
#      release's CLI (tools/upgrade/build_previous.sh: the release tools/upgrade/previous-release
#      names, cached outside the checkout per commit, built from this clone's git when missing);
#   3. runs every test of each build on SQLite, PostgreSQL and MariaDB, each build against
#      throwaway PostgreSQL 15 and MariaDB 10.11 servers of its own on 127.0.0.1
#      (tools/testdb.sh, with wall clocks the clock tests can step); within a build the backends
#      run side by side (ctest -j 4; one test at a time per server). At most three stages run
#      at once: the TSan suite beside the ci suite, then (in the ci suite's slot) a build with
#      only the SQLite backend while every PostgreSQL/MySQL client file is hidden, and its
#      tests (tests/sqlite_only); then the ASan suite beside the previous release's CLI against
#      the ci build's on one set of tables, migrated by each in turn, on every backend and
#      strategy (tests/upgrade/cross_release.sh: mutual exclusion, strictly increasing tokens,
#      scheduled jobs once per slot), and after it the Debian packages, built, installed with
#      apt, checked and removed (tests/packages);
#   4. then, three at a time: the torture smoke on the ci build, one process per backend
#      (tools/torture/run.sh --smoke --backend B: every strategy with client kills and a server
#      crash, the no-fault mode, leader/semaphore/rw/quorum modes, the negative controls on
#      SQLite; runs below their floors of grants and faults fail), and the quorum over three
#      separate member servers (--smoke --backend members: member kill, stop, clock step and
#      partition, client kill and stop, its negative control); the failover torture (--failover
#      --runs 5: a PostgreSQL primary + synchronous standby, the primary crashed and the standby
#      promoted under load, every strategy, 5 times); and the replicated-database tests
#      (tests/replication/run.sh: standby, failover, PgBouncer, Galera).
# Stages that run side by side write to build/logs/STAGE.log, printed when their step ends; each
# has ports of its own (SQLOCK_TEST_PORTS). A backend that cannot be started fails the run;
# nothing is skipped. At the end: a table of every stage's start, wall time and result.
#   tools/test-all.sh            everything (what CI runs)
#   tools/test-all.sh --quick    the developer's loop: the ci build, its tests on all three
#                                backends, nothing else
# The long tier (10-minute torture runs per backend x strategy) is outside CI:
# tools/torture/run.sh --long (tools/torture/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
case ${1:-} in
    "") ;;
    --quick) quick=1 ;;
    *) echo "usage: tools/test-all.sh [--quick]" >&2; exit 2 ;;
esac
logs=$PWD/build/logs
mkdir -p "$logs"
rm -f "$logs"/*

# ---------------------------------------------------------------- the stage table
names=() starts=() secs=() results=()
t_start=$EPOCHSECONDS
record() { # record NAME START_EPOCH END_EPOCH RC
    names+=("$1") starts+=($(($2 - t_start))) secs+=($(($3 - $2)))
    if (($4 == 0)); then results+=(ok); else results+=("FAILED ($4)"); fi
}
print_table() {
    local i total=$((EPOCHSECONDS - t_start)) verdict=ok
    echo
    echo "=== stages (wall seconds; a stage that starts before the one above ends ran beside it)"
    printf '%-42s %7s %7s  %s\n' stage start seconds result
    for i in "${!names[@]}"; do
        printf '%-42s %7d %7d  %s\n' "${names[i]}" "${starts[i]}" "${secs[i]}" "${results[i]}"
        [[ ${results[i]} == ok ]] || verdict=FAILED
    done
    printf '%-42s %7s %7d  %s\n' total "" "$total" "$verdict"
}
trap print_table EXIT

status=0
# A stage in the foreground: its output goes straight to the log of the run.
stage() { # stage NAME CMD...
    local name=$1 t0=$EPOCHSECONDS rc=0
    shift
    echo "=== $name"
    "$@" || rc=$?
    record "$name" "$t0" "$EPOCHSECONDS" "$rc"
    ((rc == 0)) || status=1
    return 0
}
# Stages side by side: started in the background with their output in build/logs/NAME.log,
# then awaited together by join_stages (which prints each log whole, in the order they were started).
# With --after EARLIER (the name of a stage started before), it starts once that one has ended:
# a slot of its own on a 2-core machine, not one more process beside everything.
bg_names=() bg_pids=()
bg_stage() { # bg_stage [--after EARLIER] NAME PORTS CMD...   (PORTS: LOW-HIGH or -)
    local name ports file after= after_pid= i
    if [[ $1 == --after ]]; then
        after=$2
        for i in "${!bg_names[@]}"; do [[ ${bg_names[i]} == "$2" ]] && after_pid=${bg_pids[i]}; done
        [[ -n $after_pid ]] || { echo "bg_stage: no stage named \"$2\" was started" >&2; exit 2; }
        shift 2
    fi
    name=$1 ports=$2
    shift 2
    file=$logs/${name//[^A-Za-z0-9_.-]/_}
    (
        if [[ -n $after_pid ]]; then
            while kill -0 "$after_pid" 2>/dev/null; do sleep 1; done
        fi
        t0=$EPOCHSECONDS rc=0
        [[ $ports == - ]] || export SQLOCK_TEST_PORTS=$ports
        "$@" >"$file.log" 2>&1 </dev/null || rc=$?
        echo "$t0 $EPOCHSECONDS $rc" >"$file.time"
    ) &
    bg_names+=("$name") bg_pids+=($!)
    echo "=== $name: started${after:+ (runs once \"$after\" has ended)} (log: ${file#"$PWD"/}.log)"
}
join_stages() {
    local i name file t0 t1 rc
    for i in "${!bg_pids[@]}"; do wait "${bg_pids[i]}" || true; done
    for i in "${!bg_names[@]}"; do
        name=${bg_names[i]} file=$logs/${bg_names[i]//[^A-Za-z0-9_.-]/_}
        echo "=== $name"
        cat "$file.log"
        read -r t0 t1 rc <"$file.time" || { t0=$t_start t1=$EPOCHSECONDS rc=1; }
        record "$name" "$t0" "$t1" "$rc"
        ((rc == 0)) || { status=1; echo "=== $name: FAILED (exit $rc)"; }
    done
    bg_names=() bg_pids=()
}

# ---------------------------------------------------------------- 1. packages
packages=(g++ cmake make pkg-config libpqxx-dev libpq-dev libmariadb-dev libmysqlcppconn-dev libboost-dev
          libsqlite3-dev nlohmann-json3-dev doctest-dev postgresql-15 mariadb-server mariadb-client
          faketime
          libasio-dev    # standalone Asio: the asynchronous locks (sqlock/async.hpp), their tests
          ccache         # ccache: every build; a clone in another folder hits (CCACHE_BASEDIR)
          pgbouncer galera-4 rsync iproute2   # the replicated setups of tools/cluster/
          python3-yaml   # python3-yaml: the alert rules are parsed when promtool is missing
          doxygen        # doxygen: the api_docs test (an undocumented public declaration fails)
          scdoc groff-base man-db  # the sqlock(1) page: scdoc builds it, groff checks it renders
          mkdocs mkdocs-material  # the documentation site: the docs_site test builds it
          abigail-tools  # abidw/abidiff: the capi.abi test (libsqlock-c against its baseline)
          python3-dev python3-pytest python3-psycopg2 python3-pymysql  # the Python package:
                         # its extension, its pytest suite, the fenced writes of its tests
          mypy           # mypy: python.types checks the package's type stubs (mypy, stubtest)
          lintian)       # lintian: the Debian packages are checked
install_missing() {
    local p missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    echo "test-all: installing ${missing[*]}"
    if [[ $EUID -ne 0 ]]; then
        echo "test-all: run as root (or install these packages first): ${missing[*]}" >&2
        return 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
}
stage "apt packages" install_missing
((status == 0)) || exit 1

# Every compiler call goes through ccache. Paths below this folder are hashed relative to it
# and the working directory is not hashed, so a fresh clone elsewhere (what CI builds) hits the
# cache of an earlier one; only the few files compiled with an absolute path miss.
export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true
ccache --zero-stats >/dev/null

# ---------------------------------------------------------------- 2. builds
presets=(ci asan tsan)
((quick)) && presets=(ci)
build() { cmake --preset "$1" >/dev/null && cmake --build --preset "$1" -j "$(nproc)"; }
for preset in "${presets[@]}"; do
    stage "build $preset" build "$preset"
done
echo "=== ccache: $(ccache --print-stats | awk -F'\t' '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hit += $2 }
    $1 == "cache_miss" { miss = $2 } END { printf "%d hits, %d misses", hit, miss }')"
((status == 0)) || exit 1
# The CLI of the previous release, for the upgrade test below: seconds from the cache, minutes
# when it must be built (once per release). A failure here fails the run, and that test.
if ((!quick)); then
    stage "previous release CLI (build or cache)" tools/upgrade/build_previous.sh
fi

# ---------------------------------------------------------------- 3. tests of each build
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
# The servers run with steppable wall clocks (offset files next to their directory), for the
# tests that step them (SQLOCK_TEST_*_CLOCK_FILE); they stay at +0 otherwise.
test_preset() {
    local dir
    dir=$(testdb_dir "$1")
    TESTDB_FAKETIME_FILE="$dir-clock" tools/testdb.sh run "$dir" -- ctest --preset "$1"
}
# At most three stages at once on this 2-core machine (each suite runs 4 tests at once):
# with seven, loads of 15-20 starved renewals and logins and timing bounds failed. The TSan
# suite is the longest (its PostgreSQL and MariaDB suites take turns on their server); the ci
# suite beside it, then the SQLite-only build in the ci suite's slot. The ASan suite follows,
# beside the cross-release test and then the Debian packages.
if ((quick)); then
    bg_stage "test ci" 20000-21999 test_preset ci
    join_stages
    exit $status
fi
bg_stage "test tsan" 20000-21999 test_preset tsan
bg_stage "test ci" 22000-23999 test_preset ci
bg_stage --after "test ci" "SQLite only (build and tests)" - tests/sqlite_only/run.sh . build/sqlite-only
join_stages
bg_stage "test asan" 20000-21999 test_preset asan
bg_stage "previous release x current (every backend)" 30000-31999 tests/upgrade/cross_release.sh . build/ci
bg_stage --after "previous release x current (every backend)" "Debian packages" - tests/packages/run.sh .
join_stages

# ---------------------------------------------------------------- 4. torture and replication
port=20000
for backend in sqlite postgresql mysql; do
    bg_stage "torture smoke: $backend" "$port-$((port + 1999))" \
        tools/torture/run.sh --smoke --backend "$backend" --build build/ci
    port=$((port + 2000))
done
# Two waves of three: six at once on a 2-core machine starved the runs (floors missed, liveness
# bounds crowded). Three servers of its own (two PostgreSQL, one MariaDB): the ports of stage 3's
# cross-release test, which has ended.
join_stages
bg_stage "torture smoke: quorum members" 30000-31999 \
    tools/torture/run.sh --smoke --backend members --build build/ci
bg_stage "torture failover x5" 26000-27999 \
    tools/torture/run.sh --failover --runs 5 --build build/ci
bg_stage "replicated databases" 28000-29999 tests/replication/run.sh . build/ci
join_stages
exit $status
