#!/usr/bin/env bash
# A throwaway 3-node MariaDB 10.11 Galera cluster on 127.0.0.1, for tests of replicated databases.
#
#   tools/cluster/galera.sh start DIR            3 fresh nodes on free ports, writes DIR/env.sh
#   tools/cluster/galera.sh stop DIR             stop every node (idempotent; SIGKILL fallback)
#   tools/cluster/galera.sh env DIR              print DIR/env.sh (exit 1 if a node is down)
#   tools/cluster/galera.sh status DIR           one line per node: pid, size, state
#   tools/cluster/galera.sh run DIR -- CMD...    start, run CMD with the env, always stop;
#                                                exits with CMD's status
#   tools/cluster/galera.sh kill DIR N...        crash node(s) N (1-3) at once: kill -9 of mariadbd
#   tools/cluster/galera.sh restart DIR N...     start node(s) N again (same data and ports); they
#                                                rejoin by IST and are waited for until Synced.
#                                                After a quorum loss (kill DIR 2 3), restart all
#                                                of them together. With no node up, the first N
#                                                bootstraps a new cluster.
#
# DIR/env.sh exports SQLOCK_CLUSTER_GALERA_URL1..3 (mysql://sqlock:PW@127.0.0.1:PORT/sqlock_test,
# one per node; user sqlock has a random password and all privileges), SQLOCK_CLUSTER_GALERA_URL
# (all three nodes in one host list), ..._PORT1..3, ..._SOCKET1..3 (root without password over
# these sockets), ..._PID1..3 and SQLOCK_CLUSTER_GALERA_DIR.
#
# Layout: DIR/nN/{my.cnf,data/,sock,mariadbd.pid,error.log}. Node 1 is bootstrapped
# (--wsrep-new-cluster), accounts are created there, then nodes 2 and 3 join one after the
# other by rsync SST (a physical copy of node 1). Nodes are small (32M buffer pool, 32M gcache),
# innodb_flush_log_at_trx_commit=1, wsrep_sync_wait=0 (the default). Needs mariadb-server,
# galera-4 and rsync (installed by apt when run as root). As root the servers run as `mysql`.
# The system instance (/var/lib/mysql, /etc/mysql) is never used or touched.
set -euo pipefail

MY_SBIN=/usr/sbin
PROVIDER=/usr/lib/galera/libgalera_smm.so
WAIT_SECS=${GALERA_WAIT_SECS:-120}
NODES=(1 2 3)

TOOL=galera SERVER_USERS=(mysql)   # as root, the servers (and the SST scripts and rsync
                                   # daemons they spawn) run as `mysql`
# die, say, usage, setup_users, alive, stop_process, pick_port, do_run, ...
# shellcheck source=tools/lib/servers.sh
source "$(dirname "$(realpath "$0")")/../lib/servers.sh"

# ---------------------------------------------------------------- helpers
ensure_binaries() {
  local b missing=()
  for b in "$MY_SBIN/mariadbd" /usr/bin/mariadb /usr/bin/mariadb-admin /usr/bin/mariadb-install-db; do
    [[ -x $b ]] || missing+=(mariadb-server)
  done
  [[ -r $PROVIDER ]] || missing+=(galera-4)
  command -v rsync >/dev/null || missing+=(rsync)
  command -v ss >/dev/null || command -v lsof >/dev/null || missing+=(iproute2)
  install_packages "${missing[@]}"
}

node_dir() { echo "$DIR/n$1"; }
# The server's pid: its pid file, else the pid it was launched as (a server that died or is
# still in SST has no pid file yet).
node_pid() {
  local p
  p=$(cat "$DIR/n$1/mariadbd.pid" 2>/dev/null || true)
  alive "$p" '^mariadbd$' || p=$(cat "$DIR/n$1/launch.pid" 2>/dev/null || true)
  echo "$p"
}
node_alive() { alive "$(node_pid "$1")" '^mariadbd$'; }
cnf_value() { sed -n "s/^$2=//p" "$DIR/n$1/my.cnf" | head -n1; }

# Run SQL on node N as root over its socket; tab-separated, no headers.
q() {
  local n=$1; shift
  mariadb --no-defaults --socket="$DIR/n$n/sock" -uroot --connect-timeout=2 -N -B "$@"
}
wsrep_status() { # N VARIABLE -> value (empty if unreachable)
  q "$1" -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | cut -f2 || true
}

launch_node() { # N [extra args]
  local n=$1; shift
  rm -f "$DIR/n$n/mariadbd.pid"
  setsid nohup "$MY_SBIN/mariadbd" --defaults-file="$DIR/n$n/my.cnf" "$@" \
    </dev/null >>"$DIR/n$n/error.log" 2>&1 &
  local pid=$! deadline=$((SECONDS + 10))
  echo "$pid" >"$DIR/n$n/launch.pid"
  # Until it has exec'd, the child is a copy of this shell (then setsid, nohup): a liveness
  # check by command name would take it for a dead server.
  until alive "$pid" '^mariadbd$'; do
    alive "$pid" . || die "node $n (mariadbd) exited at once; see $DIR/n$n/error.log"
    ((SECONDS < deadline)) || die "node $n: mariadbd did not start within 10s"
    sleep 0.02
  done
}

# Wait (bounded) until node N answers, is Synced and sees $2 nodes (default: any size).
wait_synced() {
  local n=$1 size=${2:-} deadline=$((SECONDS + WAIT_SECS)) state='' cs=''
  while :; do
    node_alive "$n" || die "node $n (mariadbd) exited during startup; see $DIR/n$n/error.log"
    if [[ -s $DIR/n$n/mariadbd.pid ]]; then
      state=$(wsrep_status "$n" wsrep_local_state_comment)
      cs=$(wsrep_status "$n" wsrep_cluster_size)
      [[ $state == Synced && ( -z $size || $cs == "$size" ) ]] && return 0
    fi
    ((SECONDS < deadline)) ||
      die "node $n not Synced${size:+ in a cluster of $size} after ${WAIT_SECS}s (state='$state' size='$cs')"
    sleep 0.2
  done
}

update_env_pids() {
  local n
  for n in "${NODES[@]}"; do
    env_set "SQLOCK_CLUSTER_GALERA_PID$n" "$(cat "$DIR/n$n/mariadbd.pid" 2>/dev/null || true)"
  done
}

# Processes left behind by an SST (rsync daemons, wsrep_sst_* scripts) or a server that died
# before writing its pid file: those whose command line names one of our node directories.
strays() {
  local d pid cmd
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [[ $pid != "$$" ]] || continue
    cmd=$(tr '\0' ' ' 2>/dev/null <"$d/cmdline") || continue
    [[ $cmd == *"$DIR/n"[123]/* ]] || continue
    alive "$pid" '^(mariadbd|rsync|xargs|wsrep_sst_.*|socat|mariadb-.*|my_print_defau.*|pv|tar|sh|bash)$' &&
      echo "$pid"
  done
  return 0
}

# ---------------------------------------------------------------- commands
# SIGTERM: a clean shutdown, leaves the cluster gracefully; SIGKILL if not gone within 30 s.
stop_node() {
  local pid
  pid=$(node_pid "$1")
  stop_process "node $1" "$pid" '^mariadbd$' 30 kill -TERM "$pid"
}

do_stop() {
  [[ -d $DIR ]] || return 0
  local n pids
  # A SIGSTOPped node (tests do that) would never shut down, and would hold up the others.
  for n in "${NODES[@]}"; do node_alive "$n" && { kill -CONT "$(node_pid "$n")" 2>/dev/null || true; }; done
  for n in 3 2 1; do stop_node "$n"; done
  pids=$(strays)
  if [[ -n $pids ]]; then
    # shellcheck disable=SC2086  # a list of pids
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
    pids=$(strays)
    [[ -z $pids ]] || say "leftover processes: $pids"
  fi
  rm -f "$DIR/env.sh"
  return 0
}

write_cnf() { # N
  local n=$1
  cat >"$DIR/n$n/my.cnf" <<EOF
# galera.sh node $n
[mariadbd]
${RUN_AS:+user=$RUN_AS}
datadir=$DIR/n$n/data
# A temporary folder of its own: bootstraps that share /tmp at once can remove each other's
# temporary tables (seen with testdb.sh's "Installation of system tables failed").
tmpdir=$DIR/n$n/tmp
socket=$DIR/n$n/sock
pid-file=$DIR/n$n/mariadbd.pid
log-error=$DIR/n$n/error.log
bind-address=127.0.0.1
port=${PORT[$n]}
skip-name-resolve
max-connections=200
character-set-server=utf8mb4
collation-server=utf8mb4_general_ci
# small
innodb_buffer_pool_size=32M
innodb_log_file_size=16M
innodb_log_buffer_size=4M
key_buffer_size=4M
aria_pagecache_buffer_size=8M
query_cache_size=0
performance_schema=OFF
# Galera
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
innodb_flush_log_at_trx_commit=1
wsrep_on=ON
wsrep_provider=$PROVIDER
wsrep_cluster_name=sqlock_test
wsrep_cluster_address=gcomm://127.0.0.1:${GPORT[1]},127.0.0.1:${GPORT[2]},127.0.0.1:${GPORT[3]}
wsrep_node_name=n$n
wsrep_node_address=127.0.0.1:${GPORT[$n]}
wsrep_node_incoming_address=127.0.0.1:${PORT[$n]}
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:${GPORT[$n]};ist.recv_addr=127.0.0.1:${IPORT[$n]};gcache.size=32M"
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:${SPORT[$n]}
EOF
}

do_start() {
  ensure_binaries
  setup_users
  do_stop
  local n
  for n in "${NODES[@]}"; do rm -rf "$DIR/n$n"; done
  rm -f "$DIR/env.sh"
  check_traversable
  check_dir_length 90   # $DIR/n1/sock

  local pw t0=$SECONDS
  pw=$(random_password)
  PORT=() GPORT=() IPORT=() SPORT=()
  for n in "${NODES[@]}"; do
    PORT[n]=$(pick_port "${PORT[@]}" "${GPORT[@]}" "${IPORT[@]}" "${SPORT[@]}")
    GPORT[n]=$(pick_port "${PORT[@]}" "${GPORT[@]}" "${IPORT[@]}" "${SPORT[@]}")
    IPORT[n]=$(pick_port "${PORT[@]}" "${GPORT[@]}" "${IPORT[@]}" "${SPORT[@]}")
    SPORT[n]=$(pick_port "${PORT[@]}" "${GPORT[@]}" "${IPORT[@]}" "${SPORT[@]}")
  done
  RUN_AS=
  [[ $EUID -eq 0 ]] && RUN_AS=$MY_OS_USER
  trap 'start_failed "$DIR"/n1/error.log "$DIR"/n2/error.log "$DIR"/n3/error.log' EXIT
  for n in "${NODES[@]}"; do
    # The node directory belongs to the server user: the rsync SST daemon runs as that user and
    # writes there (a root-owned data dir fails with "Permission denied (13)").
    mkdir -m 700 "$DIR/n$n" "$DIR/n$n/data" "$DIR/n$n/tmp"
    write_cnf "$n"
    touch "$DIR/n$n/error.log"
    chown -R "$MY_OS_USER:" "$DIR/n$n"
  done
  # Only node 1 gets system tables; nodes 2 and 3 receive a copy of node 1 by SST.
  mariadb-install-db --defaults-file="$DIR/n1/my.cnf" --auth-root-authentication-method=normal \
    --skip-test-db >>"$DIR/n1/error.log" 2>&1 || die "mariadb-install-db failed"

  launch_node 1 --wsrep-new-cluster
  wait_synced 1
  # Accounts before the others join (the SST copies them).
  mariadb_accounts_sql "$pw" | q 1
  # One joiner at a time: an rsync SST makes its donor unavailable as a donor to anyone else.
  launch_node 2
  wait_synced 2
  launch_node 3
  wait_synced 3
  for n in "${NODES[@]}"; do wait_synced "$n" 3; done
  [[ $(q 3 -e "SELECT COUNT(*) FROM mysql.user WHERE User = 'sqlock'") == 2 ]] ||
    die "the sqlock account did not reach node 3"

  (umask 077; {
    for n in "${NODES[@]}"; do
      echo "export SQLOCK_CLUSTER_GALERA_URL$n='mysql://sqlock:$pw@127.0.0.1:${PORT[n]}/sqlock_test'"
    done
    echo "export SQLOCK_CLUSTER_GALERA_URL='mysql://sqlock:$pw@127.0.0.1:${PORT[1]},127.0.0.1:${PORT[2]},127.0.0.1:${PORT[3]}/sqlock_test'"
    for n in "${NODES[@]}"; do
      echo "export SQLOCK_CLUSTER_GALERA_PORT$n=${PORT[n]}"
      echo "export SQLOCK_CLUSTER_GALERA_SOCKET$n=$(printf %q "$DIR/n$n/sock")"
      echo "export SQLOCK_CLUSTER_GALERA_PID$n=$(cat "$DIR/n$n/mariadbd.pid")"
    done
    echo "export SQLOCK_CLUSTER_GALERA_DIR=$(printf %q "$DIR")"
  } >"$DIR/env.sh")
  trap - EXIT
  for n in "${NODES[@]}"; do
    echo "node $n:  mysql://sqlock:$pw@127.0.0.1:${PORT[n]}/sqlock_test  (socket $DIR/n$n/sock)"
  done
  echo "galera: 3 nodes Synced in $((SECONDS - t0))s"
}

do_status() {
  local n
  for n in "${NODES[@]}"; do
    if node_alive "$n"; then
      printf 'node %s: pid %s port %s size=%s state=%s status=%s\n' "$n" "$(node_pid "$n")" \
        "$(cnf_value "$n" port)" "$(wsrep_status "$n" wsrep_cluster_size)" \
        "$(wsrep_status "$n" wsrep_local_state_comment)" "$(wsrep_status "$n" wsrep_cluster_status)"
    else
      echo "node $n: down"
    fi
  done
}

node_arg() {
  [[ ${1:-} =~ ^[123]$ ]] || usage
  [[ -f $DIR/n$1/my.cnf ]] || die "no node $1 in $DIR (not started?)"
}

# A crash without any shutdown work; several nodes at once (a quorum loss) with "kill DIR 2 3".
do_kill() {
  (($#)) || usage
  local n pids=()
  for n; do
    node_arg "$n"
    node_alive "$n" || die "node $n is not running"
    pids+=("$(node_pid "$n")")
  done
  kill -KILL "${pids[@]}"
  for n in "${pids[@]}"; do wait_gone "$n" 30 '^mariadbd$' || die "pid $n would not die"; done
}

# The position of a stopped node, from InnoDB (after a kill -9, grastate.dat says seqno -1):
# what mysqld_safe does, so that the node asks for the missing write sets (IST), not a full
# copy (SST).
recovered_position() {
  local n=$1 pos=''
  if (cd / && "$MY_SBIN/mariadbd" --defaults-file="$DIR/n$n/my.cnf" --wsrep-recover \
        --log-error="$DIR/n$n/recover.log" >/dev/null 2>&1); then
    pos=$(sed -n 's/.*WSREP: Recovered position: *\([^ ]*\).*/\1/p' "$DIR/n$n/recover.log" | tail -n1)
  fi
  rm -f "$DIR/n$n/recover.log"
  echo "$pos"
}

# Start stopped nodes again and wait until each is Synced. They are launched together, so
# "restart DIR 2 3" after "kill DIR 2 3" restores the primary component (the survivor alone
# is non-Primary: its last primary view had 3 members). With no node up at all, the first one
# named bootstraps a new cluster from its own data (after a kill -9 of every node that may not
# be the most advanced one: fine for tests), the others join it.
do_restart() {
  (($#)) || usage
  local n m others=0 pos args
  for n; do
    node_arg "$n"
    node_alive "$n" && die "node $n is running"
  done
  for m in "${NODES[@]}"; do [[ " $* " != *" $m "* ]] && node_alive "$m" && others=1; done
  for n; do
    args=()
    pos=$(recovered_position "$n")
    [[ -n $pos ]] && args+=(--wsrep-start-position="$pos")
    if ((!others)); then
      # Nobody to join: this node starts a new cluster.
      [[ -f $DIR/n$n/data/grastate.dat ]] &&
        sed -i 's/^safe_to_bootstrap: *0/safe_to_bootstrap: 1/' "$DIR/n$n/data/grastate.dat"
      launch_node "$n" --wsrep-new-cluster "${args[@]}"
      wait_synced "$n"
      others=1
    else
      launch_node "$n" "${args[@]}"
    fi
  done
  for n; do wait_synced "$n"; done
  update_env_pids
  echo "galera: node(s) $* Synced, cluster size $(wsrep_status "$1" wsrep_cluster_size)"
}

do_env() {
  local n
  [[ -f $DIR/env.sh ]] || { say "not running in $DIR"; exit 1; }
  for n in "${NODES[@]}"; do
    node_alive "$n" || { say "node $n is down in $DIR"; exit 1; }
  done
  cat "$DIR/env.sh"
}

# ---------------------------------------------------------------- main
(($# >= 2)) || usage
cmd=$1
set_dir "$cmd" "$2"
shift 2
case $cmd in
  start)   do_start ;;
  stop)    setup_users; do_stop ;;
  env)     do_env ;;
  status)  do_status ;;
  run)     do_run "$@" ;;
  kill)    do_kill "$@" ;;
  restart) setup_users; do_restart "$@" ;;
  *)       usage ;;
esac
