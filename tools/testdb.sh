#!/usr/bin/env bash
# Throwaway PostgreSQL 15 + MariaDB 10.11 instances for tests.
#
#   tools/testdb.sh start DIR            fresh servers on free 127.0.0.1 ports, writes DIR/env.sh
#   tools/testdb.sh stop DIR             stop both (idempotent, also handles SIGSTOPped servers)
#   tools/testdb.sh env DIR              print DIR/env.sh (exit 1 if not running)
#   tools/testdb.sh run DIR -- CMD...    start, run CMD with the env, always stop; exits with CMD's status
#   tools/testdb.sh crash DIR [postgres|mariadb|all]    crash a running server (PostgreSQL:
#                                        pg_ctl stop -m immediate; MariaDB: kill -9 of mariadbd)
#   tools/testdb.sh restart DIR [postgres|mariadb|all]  start it again, same data dir and port
#
# Opt-in: with TESTDB_FAKETIME_FILE=/path set, "start" and "restart" run both servers with a
# shifted wall clock: the real one plus the offset in a file of their own, /path.postgres and
# /path.mariadb ("+60", "-60", "+0"; created at +0), re-read on every call, so replacing one
# (write a new file, mv it over) steps that server's clock at once, and the tests of the other
# server can run meanwhile; env.sh names them SQLOCK_TEST_POSTGRES_CLOCK_FILE and
# SQLOCK_TEST_MYSQL_CLOCK_FILE. Monotonic clocks are not shifted. PostgreSQL gets
# tools/testdb_clock.c (compiled here with cc; async-signal-safe), MariaDB libfaketime (package
# faketime), which also shifts its absolute-deadline waits. The files must be readable by the
# server users.
#
# Opt-in: with TESTDB_ONLY=postgres or TESTDB_ONLY=mariadb, "start" starts that server alone
# (env.sh names only its URL and pid), and "crash", "restart", "stop" and "env" act on it alone:
# for several independent servers of one kind, one per DIR (the torture suite's quorum members,
# tools/torture/run.sh --backend members).
#
# Opt-in: with TESTDB_DEFAULT_LIMITS=1, "start" gives the servers the connection limits of the
# Debian packages (PostgreSQL max_connections = 100, MariaDB max_connections = 151) instead of
# 200 each, for benchmarks of many processes against a default server (tools/bench/run_fleet.sh).
#
# The system instances (/var/lib/postgresql, /var/lib/mysql, /etc/...) are never used or touched.
set -euo pipefail

PGBIN=/usr/lib/postgresql/15/bin
MY_SBIN=/usr/sbin
WAIT_SECS=60
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1

TOOL=testdb SERVER_USERS=(postgres mysql)
# Which servers this invocation starts and manages (TESTDB_ONLY; both by default).
WANT_PG=1 WANT_MY=1
case ${TESTDB_ONLY:-} in
  '') ;;
  postgres) WANT_MY=0 ;;
  mariadb) WANT_PG=0 ;;
  *) echo "testdb: TESTDB_ONLY must be postgres or mariadb, not '$TESTDB_ONLY'" >&2; exit 2 ;;
esac
# die, say, usage, setup_users, as_pg, alive, stop_process, pick_port, do_run, ...
# shellcheck source=tools/lib/servers.sh
source "$(dirname "$(realpath "$0")")/lib/servers.sh"

# ---------------------------------------------------------------- helpers
ensure_binaries() {
  local b missing=()
  for b in "$PGBIN"/{initdb,pg_ctl,pg_isready,psql}; do [[ -x $b ]] || missing+=(postgresql-15); done
  for b in "$MY_SBIN"/mariadbd /usr/bin/{mariadb,mariadb-admin,mariadb-install-db}; do
    [[ -x $b ]] || missing+=(mariadb-server)
  done
  install_packages "${missing[@]}"
}

# "env VAR=..." prefix that runs a server under libfaketime when TESTDB_FAKETIME_FILE is set
# (nothing otherwise): the offset file is re-read on every clock call (FAKETIME_NO_CACHE), and
# CLOCK_MONOTONIC stays real (the servers' timeouts and the libraries' deadlines use it).
FAKETIME_ENV=() PG_CLOCK_ENV=()
setup_faketime() {
  local f=${TESTDB_FAKETIME_FILE:-}
  [[ -n $f ]] || return 0
  [[ -r $FAKETIME_LIB ]] || {
    [[ $EUID -eq 0 ]] || die "TESTDB_FAKETIME_FILE needs $FAKETIME_LIB: install faketime"
    install_packages faketime
  }
  local server
  for server in postgres mariadb; do
    [[ -f $f.$server ]] || echo "+0" >"$f.$server"
    chmod a+r "$f.$server"
  done
  f=$(realpath "$f.postgres") && f=${f%.postgres}
  : >"$DIR/faketime.used"
  FAKETIME_ENV=(env "LD_PRELOAD=$FAKETIME_LIB" "FAKETIME_TIMESTAMP_FILE=$f.mariadb" FAKETIME_NO_CACHE=1
    FAKETIME_DONT_FAKE_MONOTONIC=1 DONT_FAKE_MONOTONIC=1 FAKETIME_DONT_RESET=1)
  # libfaketime is not async-signal-safe: PostgreSQL reads the clock in its SIGALRM handler, and
  # such a read sees the unshifted time now and then, which fires its timeouts early.
  local src lib
  src="$(dirname "$SELF")/testdb_clock.c" lib=$DIR/testdb_clock.so
  if [[ ! -s $lib || $src -nt $lib ]]; then
    command -v cc >/dev/null || die "TESTDB_FAKETIME_FILE needs a C compiler (cc) for $src"
    cc -std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC -o "$lib.tmp" "$src" && mv -f "$lib.tmp" "$lib" ||
      die "cannot compile $src"
    chmod 755 "$lib"
  fi
  PG_CLOCK_ENV=(env "LD_PRELOAD=$lib" "TESTDB_CLOCK_FILE=$f.postgres")
}

pg_pid() { head -n1 "$DIR/pg/postmaster.pid" 2>/dev/null || true; }
my_pid() { cat "$DIR/mariadb/mysqld.pid" 2>/dev/null || true; }

# Whether the server answers (MariaDB: and has written its pid file).
pg_ready() { "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$1"; }
my_ready() {
  mariadb-admin --no-defaults --socket="$DIR/mariadb/mysqld.sock" -uroot --connect-timeout=2 \
    ping >/dev/null 2>&1 && [[ -s $DIR/mariadb/mysqld.pid ]]
}

# Start mariadbd with the given arguments in the background; $! is its pid.
launch_mariadbd() {
  setsid nohup "${FAKETIME_ENV[@]}" "$MY_SBIN/mariadbd" "$@" </dev/null >>"$DIR/mariadb.log" 2>&1 &
}

# Wait (bounded) until the server(s) named in $1 (postgres|mariadb|all) answer.
wait_ready() {
  local which=$1 pgport deadline=$((SECONDS + WAIT_SECS))
  if [[ $which != mariadb ]]; then
    pgport=$(sed -n 's/^port = //p' "$DIR/pg/postgresql.conf" | tail -n1)
    until pg_ready "$pgport"; do
      ((SECONDS < deadline)) || die "postgres not ready after ${WAIT_SECS}s"
      sleep 0.1
    done
  fi
  if [[ $which != postgres ]]; then
    until my_ready; do
      ((SECONDS < deadline)) || die "mariadb not ready after ${WAIT_SECS}s"
      sleep 0.1
    done
  fi
}

# Rewrite the pids in env.sh after a restart.
update_env_pids() {
  ((WANT_PG)) && env_set SQLOCK_TEST_POSTGRES_PID "$(pg_pid)"
  ((WANT_MY)) && env_set SQLOCK_TEST_MYSQL_PID "$(my_pid)"
  return 0
}

# "all" means the servers this invocation manages (TESTDB_ONLY).
which_servers() {
  local which=${1:-all}
  [[ $which =~ ^(postgres|mariadb|all)$ ]] || usage
  if [[ $which == all ]]; then
    ((WANT_PG)) || which=mariadb
    ((WANT_MY)) || which=postgres
  fi
  echo "$which"
}

# ---------------------------------------------------------------- commands
do_stop() {
  [[ -d $DIR ]] || return 0
  # A server not gone within 30 s is SIGKILLed, with its children (e.g. PostgreSQL's backends).
  # pg_ctl must run as the data dir owner; -m fast aborts open sessions. (A server this
  # invocation does not manage, TESTDB_ONLY, has no pid here: stop_process does nothing.)
  stop_process postgres "$(pg_pid)" '^postgres$' 30 as_pg "$PGBIN/pg_ctl" stop -D "$DIR/pg" -m fast -w -t 30
  # SIGTERM is a clean shutdown for mariadbd and needs no working connection.
  stop_process mariadb "$(my_pid)" '^mariadbd$' 30 kill -TERM "$(my_pid)"
  rm -f "$DIR/env.sh"
  [[ -f $DIR/faketime.used ]] && sweep_faketime_shm
  return 0
}

# libfaketime leaves a shared memory segment and a semaphore per creating process
# (/dev/shm/faketime_shm_PID, sem.faketime_sem_PID) when that process is killed (crash) or
# exits without its destructor: remove the ones whose creator is gone (or a zombie).
sweep_faketime_shm() {
  local f pid
  for f in /dev/shm/faketime_shm_* /dev/shm/sem.faketime_sem_*; do
    [[ -e $f ]] || continue
    pid=${f##*_}
    alive "$pid" . || rm -f "$f"
  done
  return 0
}

do_start() {
  ensure_binaries
  setup_users
  do_stop
  # Only remove what this script creates, never DIR itself.
  rm -rf "$DIR/pg" "$DIR/pg-sock" "$DIR/mariadb" "$DIR/mariadb-tmp" "$DIR/pg.log" "$DIR/mariadb.log" "$DIR/mariadb.args" \
    "$DIR/env.sh"
  check_traversable
  # Unix socket paths are limited to 107 bytes.
  check_dir_length 80

  local pw pgport myport
  pw=$(random_password)
  pgport=$(pick_port)
  myport=$(pick_port "$pgport")
  trap 'start_failed "$DIR/pg.log" "$DIR/mariadb.log"' EXIT
  # Tests get headroom (200); TESTDB_DEFAULT_LIMITS=1 keeps the packages' defaults.
  local pg_max=200 my_max=200
  [[ ${TESTDB_DEFAULT_LIMITS:-0} == 1 ]] && pg_max=100 my_max=151

  # --- PostgreSQL
  if ((WANT_PG)); then
    mkdir -m 700 "$DIR/pg" "$DIR/pg-sock"
    touch "$DIR/pg.log"
    chown "$PG_OS_USER:" "$DIR/pg" "$DIR/pg-sock" "$DIR/pg.log"
    # host (TCP) auth is scram so wrong passwords fail; local socket is trust so
    # we can bootstrap without a password (socket dir is 0700, owner-only).
    as_pg "$PGBIN/initdb" -D "$DIR/pg" -U postgres --auth-host=scram-sha-256 --auth-local=trust \
      --encoding=UTF8 --locale=C >>"$DIR/pg.log" 2>&1
    cat >>"$DIR/pg/postgresql.conf" <<EOF
# --- testdb.sh
listen_addresses = '127.0.0.1'
port = $pgport
unix_socket_directories = '$DIR/pg-sock'
max_connections = $pg_max
password_encryption = 'scram-sha-256'
EOF
    # -W: don't wait here; we poll both servers together below.
    as_pg "${PG_CLOCK_ENV[@]}" "$PGBIN/pg_ctl" start -W -D "$DIR/pg" -l "$DIR/pg.log" >/dev/null
  fi

  # --- MariaDB
  local mystarter=0
  if ((WANT_MY)); then
    # --no-defaults (must be first) keeps /etc/mysql/*.cnf (system socket, pid,
    # log paths, plugins) out of our instance.
    # A temporary folder of its own: two bootstraps sharing /tmp at once (instances started side
    # by side by tools/test-all.sh) removed each other's temporary tables, and
    # mariadb-install-db failed with "Installation of system tables failed".
    local myargs=(--no-defaults --datadir="$DIR/mariadb" --tmpdir="$DIR/mariadb-tmp")
    [[ $EUID -eq 0 ]] && myargs+=(--user="$MY_OS_USER")
    mkdir -m 700 "$DIR/mariadb" "$DIR/mariadb-tmp"
    touch "$DIR/mariadb.log"
    chown "$MY_OS_USER:" "$DIR/mariadb" "$DIR/mariadb-tmp" "$DIR/mariadb.log"
    # "normal": passwordless root (the default "socket" ties root to OS user
    # names). It also creates root@127.0.0.1/::1/<hostname>, removed below.
    mariadb-install-db "${myargs[@]}" --auth-root-authentication-method=normal --skip-test-db \
      >>"$DIR/mariadb.log" 2>&1
    # Run mariadbd directly (no mysqld_safe, so the pid is the server itself);
    # setsid detaches it from our session/terminal.
    myargs+=(--port="$myport" --bind-address=127.0.0.1
      --socket="$DIR/mariadb/mysqld.sock" --pid-file="$DIR/mariadb/mysqld.pid"
      --log-error="$DIR/mariadb.log" --skip-name-resolve --max-connections="$my_max"
      --innodb-flush-log-at-trx-commit=1 --character-set-server=utf8mb4
      --collation-server=utf8mb4_general_ci
      # sqlock status names select_for_update holders through the InnoDB lock monitor, and the
      # waiters in unique_key/optimistic_version queues through performance_schema
      --innodb-status-output-locks=ON --performance-schema=ON
      --performance-schema-instrument='wait/lock/metadata/sql/mdl=ON')
    # Kept for "restart" (same arguments after a crash), one per line.
    printf '%s\n' "${myargs[@]}" >"$DIR/mariadb.args"
    launch_mariadbd "${myargs[@]}"
    mystarter=$!
  fi

  # --- wait for both (bounded); a server not started (TESTDB_ONLY) counts as ready
  local t0=$SECONDS pg_ok=$((1 - WANT_PG)) my_ok=$((1 - WANT_MY))
  while ((!pg_ok || !my_ok)); do
    ((pg_ok)) || { pg_ready "$pgport" && pg_ok=1; } || true
    ((my_ok)) || { my_ready && my_ok=1; } || true
    ((!WANT_MY)) || kill -0 "$mystarter" 2>/dev/null || die "mariadbd exited during startup"
    # pg_ctl -W gives no pid to watch; after a grace period for the pid file
    # to appear, a missing postmaster means it died.
    ((pg_ok || SECONDS < t0 + 5)) || alive "$(pg_pid)" '^postgres$' || die "postgres exited during startup"
    ((SECONDS < t0 + WAIT_SECS)) || die "servers not ready after ${WAIT_SECS}s (postgres=$pg_ok mariadb=$my_ok)"
    ((pg_ok && my_ok)) || sleep 0.2
  done

  # --- accounts and databases
  ((!WANT_PG)) || "$PGBIN/psql" -q -X -v ON_ERROR_STOP=1 -h "$DIR/pg-sock" -p "$pgport" -U postgres -d postgres \
    -c "CREATE ROLE sqlock LOGIN SUPERUSER PASSWORD '$pw'" \
    -c "CREATE DATABASE sqlock_test OWNER sqlock" >/dev/null
  # Drop passwordless root over TCP (any local user could use it); root stays
  # reachable via our socket only (with skip-name-resolve, 'localhost' = socket).
  ((!WANT_MY)) || mariadb_accounts_sql "$pw" | mariadb --no-defaults --socket="$DIR/mariadb/mysqld.sock" -uroot

  (umask 077; : >"$DIR/env.sh")
  if ((WANT_PG)); then
    echo "export SQLOCK_TEST_POSTGRES_URL='postgresql://sqlock:$pw@127.0.0.1:$pgport/sqlock_test'"
    echo "export SQLOCK_TEST_POSTGRES_PID=$(pg_pid)"
  fi >>"$DIR/env.sh"
  if ((WANT_MY)); then
    echo "export SQLOCK_TEST_MYSQL_URL='mysql://sqlock:$pw@127.0.0.1:$myport/sqlock_test'"
    echo "export SQLOCK_TEST_MYSQL_PID=$(my_pid)"
  fi >>"$DIR/env.sh"
  echo "export SQLOCK_TEST_DB_DIR=$(printf %q "$DIR")" >>"$DIR/env.sh"
  # Tests that step the servers' clocks find the offset file here.
  if [[ -n ${TESTDB_FAKETIME_FILE:-} ]]; then
    echo "export SQLOCK_TEST_POSTGRES_CLOCK_FILE=$(printf %q "$(realpath "$TESTDB_FAKETIME_FILE.postgres")")"
    echo "export SQLOCK_TEST_MYSQL_CLOCK_FILE=$(printf %q "$(realpath "$TESTDB_FAKETIME_FILE.mariadb")")"
  fi >>"$DIR/env.sh"
  trap - EXIT
  ((!WANT_PG)) || echo "postgres: postgresql://sqlock:$pw@127.0.0.1:$pgport/sqlock_test"
  ((!WANT_MY)) || echo "mariadb:  mysql://sqlock:$pw@127.0.0.1:$myport/sqlock_test"
}

# Crash without any shutdown work: what a power cut or an OOM kill leaves behind.
do_crash() {
  local which pid
  which=$(which_servers "${1:-}")
  if [[ $which != mariadb ]]; then
    pid=$(pg_pid)
    alive "$pid" '^postgres$' || die "postgres not running in $DIR"
    signal_tree CONT "$pid"   # a SIGSTOPped server would not act on it
    as_pg "$PGBIN/pg_ctl" stop -D "$DIR/pg" -m immediate -w -t 30 >/dev/null
  fi
  if [[ $which != postgres ]]; then
    pid=$(my_pid)
    alive "$pid" '^mariadbd$' || die "mariadb not running in $DIR"
    kill -KILL "$pid"
    wait_gone "$pid" 30 '^mariadbd$' || die "mariadbd $pid would not die"
  fi
}

do_restart() {
  local which args=()
  which=$(which_servers "${1:-}")
  if [[ $which != mariadb ]] && ! alive "$(pg_pid)" '^postgres$'; then
    [[ -d $DIR/pg ]] || die "no postgres data dir in $DIR"
    as_pg "${PG_CLOCK_ENV[@]}" "$PGBIN/pg_ctl" start -W -D "$DIR/pg" -l "$DIR/pg.log" >/dev/null
  fi
  if [[ $which != postgres ]] && ! alive "$(my_pid)" '^mariadbd$'; then
    [[ -s $DIR/mariadb.args ]] || die "no $DIR/mariadb.args (started by an older testdb.sh?)"
    mapfile -t args <"$DIR/mariadb.args"
    # The pid file of the killed server would make wait_ready succeed too early.
    rm -f "$DIR/mariadb/mysqld.pid"
    launch_mariadbd "${args[@]}"
  fi
  wait_ready "$which"
  update_env_pids
}

do_env() {
  if [[ -f $DIR/env.sh ]] && { ((!WANT_PG)) || alive "$(pg_pid)" '^postgres$'; } &&
    { ((!WANT_MY)) || alive "$(my_pid)" '^mariadbd$'; }; then
    cat "$DIR/env.sh"
  else
    say "not running in $DIR"; exit 1
  fi
}

# ---------------------------------------------------------------- main
(($# >= 2)) || usage
cmd=$1
set_dir "$cmd" "$2"
shift 2
case $cmd in
  start) setup_faketime; do_start ;;
  stop)  setup_users; do_stop ;;
  env)   do_env ;;
  run)   do_run "$@" ;;
  crash)   setup_users; do_crash "$@" ;;
  restart) setup_users; setup_faketime; do_restart "$@" ;;
  *)     usage ;;
esac
