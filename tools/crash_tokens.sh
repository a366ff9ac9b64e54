#!/usr/bin/env bash
# Fencing tokens across a server crash: N processes contend for one lock name while the server
# is crashed (PostgreSQL: pg_ctl stop -m immediate; MariaDB: kill -9 mariadbd) and started
# again on the same data directory and port; then the grant log is checked for tokens handed
# out twice or going back (DESIGN.md §8).
#
#   tools/crash_tokens.sh DIR BACKEND STRATEGY [RUNS]
#
# DIR: servers started by `tools/testdb.sh start DIR` (its env.sh is read, and its PIDs are
# updated after each restart). BACKEND: postgresql | mysql. STRATEGY: unique_key |
# select_for_update | optimistic_version. RUNS: 1 by default, each on a fresh lock name.
# Settings (environment): CRASH_PROCESSES (6), CRASH_TTL_MS (1500), CRASH_BEFORE_S (3),
# CRASH_AFTER_S (4), SQLOCK_BUILD (build/ci: sqlock_contender and the sqlock CLI),
# CRASH_KIND: server (default) or backend (PostgreSQL: kill -9 one client backend; the
# postmaster then ends all sessions and runs crash recovery, restart_after_crash = on).
# The contenders are tests/support/contender.cpp (one "token pid" line per grant, 0.2-1 ms
# holds), restarted when the crash makes them exit.
# Prints one line per run and exits 1 when any run saw a repeated or decreasing token.
set -euo pipefail

usage() { sed -n '7,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
(($# >= 3)) || usage
DIR=$(cd "$1" && pwd -P) BACKEND=$2 STRATEGY=$3 RUNS=${4:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
BUILD=${SQLOCK_BUILD:-$ROOT/build/ci}
PROCESSES=${CRASH_PROCESSES:-6} TTL_MS=${CRASH_TTL_MS:-1500} KIND=${CRASH_KIND:-server}
BEFORE_S=${CRASH_BEFORE_S:-3} AFTER_S=${CRASH_AFTER_S:-4}
PGBIN=/usr/lib/postgresql/15/bin
CONTENDER=$BUILD/tests/sqlock_contender CLI=$BUILD/sqlock
[[ -x $CONTENDER && -x $CLI ]] || { echo "crash_tokens: build $BUILD first" >&2; exit 2; }
[[ -f $DIR/env.sh ]] || { echo "crash_tokens: no servers in $DIR (tools/testdb.sh start)" >&2; exit 2; }
# shellcheck disable=SC1091
source "$DIR/env.sh"
case $BACKEND in
  postgresql) URL=$SQLOCK_TEST_POSTGRES_URL ;;
  mysql)      URL=$SQLOCK_TEST_MYSQL_URL ;;
  *)          usage ;;
esac

as_owner() { # run as the owner of $1 (the data directory), as testdb.sh does
  local u; u=$(stat -c %U "$1"); shift
  if [[ $EUID -eq 0 && $u != root ]]; then (cd / && runuser -u "$u" -- "$@"); else "$@"; fi
}

set_env_pid() { sed -i "s/^export $1=.*/export $1=$2/" "$DIR/env.sh"; }

crash_and_restart() {
  if [[ $BACKEND == postgresql && $KIND == backend ]]; then
    local port victim
    port=${URL##*:} port=${port%%/*}
    victim=$(as_owner "$DIR/pg" "$PGBIN/psql" -X -At -h "$DIR/pg-sock" -p "$port" -U postgres \
               -d postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'
                               AND pid <> pg_backend_pid() LIMIT 1")
    kill -KILL "$victim"
    local deadline=$((SECONDS + 60))
    sleep 0.5 # the postmaster notices, ends every session and runs crash recovery
    until "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port"; do
      ((SECONDS < deadline)) || { echo "crash_tokens: postgres did not come back" >&2; exit 1; }
      sleep 0.1
    done
  elif [[ $BACKEND == postgresql ]]; then
    as_owner "$DIR/pg" "$PGBIN/pg_ctl" stop -D "$DIR/pg" -m immediate -w >/dev/null
    as_owner "$DIR/pg" "$PGBIN/pg_ctl" start -D "$DIR/pg" -l "$DIR/pg.log" -w >/dev/null
    set_env_pid SQLOCK_TEST_POSTGRES_PID "$(head -n1 "$DIR/pg/postmaster.pid")"
  else
    local pid args=()
    pid=$(cat "$DIR/mariadb/mysqld.pid")
    mapfile -d '' -t args <"/proc/$pid/cmdline" # the same binary and arguments testdb.sh used
    kill -KILL "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    rm -f "$DIR/mariadb/mysqld.pid"
    (setsid nohup "${args[@]}" </dev/null >>"$DIR/mariadb.log" 2>&1 &) # not our job
    local deadline=$((SECONDS + 60))
    until mariadb-admin --no-defaults --socket="$DIR/mariadb/mysqld.sock" -uroot \
            --connect-timeout=2 ping >/dev/null 2>&1 && [[ -s $DIR/mariadb/mysqld.pid ]]; do
      ((SECONDS < deadline)) || { echo "crash_tokens: mariadbd did not come back" >&2; exit 1; }
      sleep 0.1
    done
    set_env_pid SQLOCK_TEST_MYSQL_PID "$(cat "$DIR/mariadb/mysqld.pid")"
  fi
}

# One contender slot: runs the contender again whenever it exits (the crash ends them).
contend() {
  local name=$1 log=$2 stop=$3
  while [[ ! -e $stop ]]; do
    "$CONTENDER" "$URL" "$name" "$TTL_MS" 1000000 "$log" "$STRATEGY" 2>>"$log.err" || sleep 0.05
  done
}

"$CLI" --url "$URL" migrate >/dev/null
work=$(mktemp -d /tmp/crash-tokens.XXXXXX)
failed=0
for ((run = 1; run <= RUNS; run++)); do
  name="crash-$STRATEGY-$run-$RANDOM$RANDOM" log=$work/run$run.log stop=$work/run$run.stop
  pids=()
  : >"$log"
  for ((p = 0; p < PROCESSES; p++)); do contend "$name" "$log" "$stop" 2>/dev/null & pids+=($!); done
  sleep "$BEFORE_S"
  before=$(wc -l <"$log")
  crash_and_restart
  sleep "$AFTER_S"
  touch "$stop"
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null; do # this slot's contender child only
      pkill -TERM -P "$pid" 2>/dev/null || true
      sleep 0.1
    done
    wait "$pid" 2>/dev/null || true
  done
  total=$(wc -l <"$log")
  repeated=$(awk '{print $1}' "$log" | sort -n | uniq -d | wc -l)
  # In log order (grant order: each line is written while holding the lock).
  decreasing=$(awk '{ if (NR > 1 && $1 <= max) bad++; if ($1 > max) max = $1 } END { print bad + 0 }' "$log")
  examples=$(awk '{print $1}' "$log" | sort -n | uniq -d | head -3 | tr '\n' ' ')
  printf '%s %s (%s crash) run %d: %d grants (%d before the crash, %d after), %d tokens repeated, %d not above all earlier%s\n' \
    "$BACKEND" "$STRATEGY" "$KIND" "$run" "$total" "$before" "$((total - before))" "$repeated" "$decreasing" \
    "${examples:+ (e.g. $examples)}"
  ((total - before > 0)) || { echo "  no grants after the restart: see $log.err" >&2; failed=1; }
  ((repeated == 0 && decreasing == 0)) || failed=1
done
echo "logs: $work"
exit "$failed"
