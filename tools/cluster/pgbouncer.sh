#!/usr/bin/env bash
# Throwaway PostgreSQL 15 behind PgBouncer (Debian package pgbouncer, 1.18) in pool_mode=transaction.
#
#   tools/cluster/pgbouncer.sh start DIR           fresh servers (tools/testdb.sh start DIR/db, so
#                                                  MariaDB starts too) + pgbouncer; writes DIR/env.sh
#   tools/cluster/pgbouncer.sh stop DIR            stop pgbouncer and the servers (idempotent)
#   tools/cluster/pgbouncer.sh env DIR             print DIR/env.sh (exit 1 if not running)
#   tools/cluster/pgbouncer.sh run DIR -- CMD...   start, run CMD with the env, always stop;
#                                                  exits with CMD's status
#
# DIR/env.sh exports everything tools/testdb.sh's env.sh does (SQLOCK_TEST_POSTGRES_URL is the
# direct URL) plus
#   SQLOCK_CLUSTER_BOUNCER_URL     postgresql://sqlock:PW@127.0.0.1:PORT/sqlock_test via pgbouncer
#   SQLOCK_CLUSTER_BOUNCER_ADMIN_URL  the same to pgbouncer's admin console (database "pgbouncer";
#                                  sqlock is an admin user: SHOW POOLS, SHOW SERVERS, ...)
#   SQLOCK_CLUSTER_DIRECT_URL      = SQLOCK_TEST_POSTGRES_URL
#   SQLOCK_CLUSTER_BOUNCER_PID, SQLOCK_CLUSTER_POSTGRES_PID, SQLOCK_CLUSTER_BOUNCER_POOL_MODE
#
# pgbouncer listens on 127.0.0.1 only (no unix socket), authenticates clients with SCRAM against a
# userlist holding the plaintext password (so it can log in to PostgreSQL with SCRAM too), and
# keeps default_pool_size = 4 server connections per (database, user) so that clients really do
# share server sessions; max_client_conn = 200. Log, pid file and config are in DIR/bouncer.
# pgbouncer refuses to run as root, so as root it runs as the OS user "postgres".
#
# Opt-in (for comparisons): BOUNCER_POOL_MODE=session|transaction|statement (default
# transaction), BOUNCER_POOL_SIZE=N (default 4).
# tools/cluster/pgbouncer_sqlock_check.sh DIR runs the sqlock CLI through it (an empirical check).
set -euo pipefail

BOUNCER=/usr/sbin/pgbouncer
PGBIN=/usr/lib/postgresql/15/bin
WAIT_SECS=30

die() { echo "pgbouncer.sh: $*" >&2; exit 1; }
usage() { sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# ---------------------------------------------------------------- helpers
ensure_binaries() {
  [[ -x $BOUNCER ]] && return 0
  [[ $EUID -eq 0 ]] || die "$BOUNCER missing; install pgbouncer"
  echo "pgbouncer.sh: installing pgbouncer via apt" >&2
  # The package's own service must not start (policy-rc.d usually prevents it in containers);
  # we never use /etc/pgbouncer or the system service.
  DEBIAN_FRONTEND=noninteractive apt-get install -y pgbouncer >&2 || {
    apt-get update >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y pgbouncer >&2
  }
  [[ -x $BOUNCER ]] || die "pgbouncer still missing after apt-get install"
}

setup_user() {
  if [[ $EUID -eq 0 ]]; then
    BOUNCER_OS_USER=postgres
    id -u "$BOUNCER_OS_USER" >/dev/null 2>&1 ||
      useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$BOUNCER_OS_USER"
  else
    BOUNCER_OS_USER=$(id -un)
  fi
}

as_bouncer_user() {
  if [[ $EUID -eq 0 ]]; then (cd / && runuser -u "$BOUNCER_OS_USER" -- "$@"); else "$@"; fi
}

# True if PID is a live (non-zombie) process whose command name matches regex $2.
alive() {
  local pid=$1 stat
  [[ $pid =~ ^[0-9]+$ ]] && stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]] || return 1
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) =~ $2 ]]
}

wait_gone() {
  local deadline=$((SECONDS + $2))
  while alive "$1" "$3"; do ((SECONDS < deadline)) || return 1; sleep 0.1; done
}

# pick_port: a free port (SQLOCK_TEST_PORTS, tools/free_port.sh).
# shellcheck source=tools/free_port.sh
source "$(dirname "$(realpath "$0")")/../free_port.sh"

bouncer_pid() { cat "$DIR/bouncer/pgbouncer.pid" 2>/dev/null || true; }

# ---------------------------------------------------------------- commands
do_stop() {
  [[ -d $DIR ]] || return 0
  local pid
  pid=$(bouncer_pid)
  if alive "$pid" '^pgbouncer$'; then
    kill -CONT "$pid" 2>/dev/null || true
    # SIGTERM: immediate shutdown (SIGINT would wait for clients to finish).
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_gone "$pid" 10 '^pgbouncer$'; then
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone "$pid" 5 '^pgbouncer$' || echo "pgbouncer.sh: pgbouncer $pid would not die" >&2
    fi
  fi
  rm -f "$DIR/bouncer/pgbouncer.pid" "$DIR/env.sh"
  [[ -d $DIR/db ]] && bash "$TESTDB" stop "$DIR/db"
  return 0
}

start_failed() {
  echo "pgbouncer.sh: start failed" >&2
  [[ -s $DIR/bouncer/pgbouncer.log ]] && { echo "==> $DIR/bouncer/pgbouncer.log <==" >&2; tail -n 30 "$DIR/bouncer/pgbouncer.log" >&2; }
  do_stop || true
}

do_start() {
  ensure_binaries
  setup_user
  do_stop
  rm -rf "$DIR/bouncer"
  local mode=${BOUNCER_POOL_MODE:-transaction} size=${BOUNCER_POOL_SIZE:-4}
  [[ $mode =~ ^(session|transaction|statement)$ ]] || die "BOUNCER_POOL_MODE must be session, transaction or statement"
  [[ $size =~ ^[1-9][0-9]*$ ]] || die "BOUNCER_POOL_SIZE must be a positive number"
  trap start_failed EXIT

  bash "$TESTDB" start "$DIR/db" >&2
  local direct pw pgport pgpid
  # shellcheck disable=SC1091
  direct=$(source "$DIR/db/env.sh" && echo "$SQLOCK_TEST_POSTGRES_URL")
  # shellcheck disable=SC1091
  pgpid=$(source "$DIR/db/env.sh" && echo "$SQLOCK_TEST_POSTGRES_PID")
  [[ $direct =~ ^postgresql://sqlock:([0-9a-f]+)@127\.0\.0\.1:([0-9]+)/sqlock_test$ ]] ||
    die "unexpected SQLOCK_TEST_POSTGRES_URL in $DIR/db/env.sh"
  pw=${BASH_REMATCH[1]} pgport=${BASH_REMATCH[2]}

  local b=$DIR/bouncer port
  port=$(pick_port)
  mkdir -m 700 "$b"
  # Plaintext password: pgbouncer then does SCRAM both with clients and with PostgreSQL.
  (umask 077; printf '"sqlock" "%s"\n' "$pw" >"$b/userlist.txt")
  cat >"$b/pgbouncer.ini" <<EOF
; written by tools/cluster/pgbouncer.sh
[databases]
sqlock_test = host=127.0.0.1 port=$pgport dbname=sqlock_test
postgres = host=127.0.0.1 port=$pgport dbname=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $b/userlist.txt
admin_users = sqlock
stats_users = sqlock
pool_mode = $mode
default_pool_size = $size
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 200
server_round_robin = 0
ignore_startup_parameters = extra_float_digits
logfile = $b/pgbouncer.log
pidfile = $b/pgbouncer.pid
log_connections = 0
log_disconnections = 0
EOF
  touch "$b/pgbouncer.log"
  chown -R "$BOUNCER_OS_USER:" "$b"
  # -d: daemonize (setsid, detached from us); the pid file names the daemon.
  as_bouncer_user "$BOUNCER" -d -q "$b/pgbouncer.ini" || die "pgbouncer -d failed"

  # Bounded wait: the pid file, then a real query through it (login + a server connection).
  local deadline=$((SECONDS + WAIT_SECS))
  until alive "$(bouncer_pid)" '^pgbouncer$'; do
    ((SECONDS < deadline)) || die "pgbouncer did not write a live pid file within ${WAIT_SECS}s"
    sleep 0.1
  done
  local url="postgresql://sqlock:$pw@127.0.0.1:$port/sqlock_test"
  until [[ $(PGCONNECT_TIMEOUT=2 "$PGBIN/psql" -X -qAt -d "$url" -c 'SELECT 1' 2>/dev/null) == 1 ]]; do
    alive "$(bouncer_pid)" '^pgbouncer$' || die "pgbouncer exited during startup"
    ((SECONDS < deadline)) || die "no query through pgbouncer within ${WAIT_SECS}s"
    sleep 0.2
  done

  (umask 077; {
    cat "$DIR/db/env.sh"
    echo "export SQLOCK_CLUSTER_BOUNCER_URL='$url'"
    echo "export SQLOCK_CLUSTER_BOUNCER_ADMIN_URL='postgresql://sqlock:$pw@127.0.0.1:$port/pgbouncer'"
    echo "export SQLOCK_CLUSTER_DIRECT_URL='$direct'"
    echo "export SQLOCK_CLUSTER_BOUNCER_PID=$(bouncer_pid)"
    echo "export SQLOCK_CLUSTER_POSTGRES_PID=$pgpid"
    echo "export SQLOCK_CLUSTER_BOUNCER_POOL_MODE=$mode"
    echo "export SQLOCK_CLUSTER_DIR=$(printf %q "$DIR")"
  } >"$DIR/env.sh")
  trap - EXIT
  echo "pgbouncer ($mode, pool $size): $url"
  echo "direct:    $direct"
}

do_env() {
  if [[ -f $DIR/env.sh ]] && alive "$(bouncer_pid)" '^pgbouncer$'; then
    cat "$DIR/env.sh"
  else
    echo "pgbouncer.sh: not running in $DIR" >&2; exit 1
  fi
}

do_run() {
  [[ ${1:-} == -- ]] && shift
  (($#)) || usage
  trap 'bash "$SELF" stop "$DIR"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  bash "$SELF" start "$DIR" >&2
  # shellcheck disable=SC1091
  source "$DIR/env.sh"
  # Background + wait so that a TERM to us reaches CMD at once (see tools/testdb.sh).
  "$@" <&0 &
  local child=$! rc
  trap 'kill -TERM $child 2>/dev/null || true' INT TERM
  while :; do
    wait "$child" && rc=0 || rc=$?
    kill -0 "$child" 2>/dev/null || break
  done
  exit "$rc"
}

# ---------------------------------------------------------------- main
(($# >= 2)) || usage
cmd=$1 DIR=$2 SELF=$(realpath "$0")
TESTDB="$(dirname "$SELF")/../testdb.sh"
shift 2
[[ $cmd == start || $cmd == run ]] && mkdir -p "$DIR"
if [[ -d $DIR ]]; then DIR=$(cd "$DIR" && pwd -P); else DIR=$(realpath -m "$DIR"); fi
case $cmd in
  start) do_start ;;
  stop)  setup_user; do_stop ;;
  env)   do_env ;;
  run)   do_run "$@" ;;
  *)     usage ;;
esac
