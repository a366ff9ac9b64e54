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

TOOL=pgbouncer.sh SERVER_USERS=(postgres)   # pgbouncer runs as PG_OS_USER
# die, say, usage, setup_users, as_pg, alive, stop_process, pick_port, do_run, ...
# shellcheck source=tools/lib/servers.sh
source "$(dirname "$(realpath "$0")")/../lib/servers.sh"

# ---------------------------------------------------------------- helpers
# The package's own service must not start (policy-rc.d usually prevents it in containers); we
# never use /etc/pgbouncer or the system service.
ensure_binaries() {
  [[ -x $BOUNCER ]] && return 0
  install_packages pgbouncer
  [[ -x $BOUNCER ]] || die "pgbouncer still missing after apt-get install"
}

bouncer_pid() { cat "$DIR/bouncer/pgbouncer.pid" 2>/dev/null || true; }

# ---------------------------------------------------------------- commands
do_stop() {
  [[ -d $DIR ]] || return 0
  local pid
  pid=$(bouncer_pid)
  # SIGTERM: immediate shutdown (SIGINT would wait for clients to finish); SIGKILL after 10 s.
  stop_process pgbouncer "$pid" '^pgbouncer$' 10 kill -TERM "$pid"
  rm -f "$DIR/bouncer/pgbouncer.pid" "$DIR/env.sh"
  [[ -d $DIR/db ]] && bash "$TESTDB" stop "$DIR/db"
  return 0
}

do_start() {
  ensure_binaries
  setup_users
  do_stop
  rm -rf "$DIR/bouncer"
  check_traversable
  local mode=${BOUNCER_POOL_MODE:-transaction} size=${BOUNCER_POOL_SIZE:-4}
  [[ $mode =~ ^(session|transaction|statement)$ ]] || die "BOUNCER_POOL_MODE must be session, transaction or statement"
  [[ $size =~ ^[1-9][0-9]*$ ]] || die "BOUNCER_POOL_SIZE must be a positive number"
  trap 'start_failed "$DIR/bouncer/pgbouncer.log"' EXIT

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
  chown -R "$PG_OS_USER:" "$b"
  # -d: daemonize (setsid, detached from us); the pid file names the daemon.
  as_pg "$BOUNCER" -d -q "$b/pgbouncer.ini" || die "pgbouncer -d failed"

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
    say "not running in $DIR"; exit 1
  fi
}

# ---------------------------------------------------------------- main
(($# >= 2)) || usage
cmd=$1
TESTDB="$(dirname "$SELF")/../testdb.sh"
set_dir "$cmd" "$2"
shift 2
case $cmd in
  start) do_start ;;
  stop)  setup_users; do_stop ;;
  env)   do_env ;;
  run)   do_run "$@" ;;
  *)     usage ;;
esac
