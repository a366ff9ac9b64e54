#!/usr/bin/env bash
# Throwaway PostgreSQL 15 primary + synchronous hot standby on 127.0.0.1, with failover.
#
#   tools/cluster/pg_replica.sh start DIR [--manager pgctl|patroni]
#                                  fresh primary (node1) + sync standby (node2, application_name
#                                  standby1) on free ports; waits until the standby is streaming
#                                  and sync; writes DIR/env.sh (SQLOCK_CLUSTER_PG_*)
#   tools/cluster/pg_replica.sh stop DIR        stop everything (idempotent, handles SIGSTOPped servers)
#   tools/cluster/pg_replica.sh failover DIR    crash the primary (pg_ctl stop -m immediate), promote
#                                  the standby, drop the sync requirement on it; prints step times
#   tools/cluster/pg_replica.sh rejoin DIR      old primary becomes a sync standby of the new one
#                                  (pg_rewind, a fresh pg_basebackup if that fails): fail over again
#   tools/cluster/pg_replica.sh status DIR      which node is primary, replication state
#   tools/cluster/pg_replica.sh env DIR         print DIR/env.sh (exit 1 if not running)
#   tools/cluster/pg_replica.sh run DIR [--manager M] -- CMD...
#                                  start, run CMD with env.sh sourced, always stop; CMD's status
#
# Managers: "pgctl" (default, what CI uses): failover is done by this script, pg_ctl promote.
# "patroni" (opt-in; packages patroni, etcd-server): one etcd member and two Patroni nodes
# (synchronous_mode, primary_start_timeout 0, use_pg_rewind); "failover" only crashes the
# primary's postgres and waits for Patroni to promote the sync standby, and Patroni itself
# rejoins the old primary as a standby ("rejoin" waits for that).
#
# pgctl: synchronous_standby_names = 'FIRST 1 (standby1)', the standby connects as standby1
# (after rejoin too); failover drops it on the standby (ALTER SYSTEM, reload) just before
# pg_ctl promote, so no write on the new primary waits for a standby. Crash to writable
# primary ~0.35 s here. patroni: Patroni names the sync standby by member (node1/node2);
# crash to writable primary ~2-3 s (loop_wait 1, ttl 20). Repeated failovers: rejoin after
# each failover, or a fresh start per round; both are tested.
#
# FAILOVER_DELAY=SECS: "failover" (pgctl) waits that long between the crash and the promotion,
# standing in for a manager's detection time.
#
# env.sh: SQLOCK_CLUSTER_PG_{PRIMARY,STANDBY,MULTI,NODE1,NODE2}_URL (MULTI = both hosts in one
# libpq URL, node1 first, no target_session_attrs), ..._{PRIMARY,STANDBY}_{PORT,PID,DATA,NODE},
# ..._STANDBY_UP (0 after a failover until rejoin), ..._FAILOVERS, ..._LAST_CRASH_AT (epoch
# seconds.micros of the last failover's crash), ..._MANAGER, ..._DIR.
# Server processes run as the "postgres" OS user (runuser) when started as root.
set -euo pipefail

PGBIN=/usr/lib/postgresql/15/bin
WAIT_SECS=${WAIT_SECS:-60}
SYNC_NAMES="FIRST 1 (standby1)"

TOOL=pg_replica SERVER_USERS=(postgres)
# die, say, usage, setup_users, as_pg, alive, stop_process, pick_port, do_run, ...
# shellcheck source=tools/lib/servers.sh
source "$(dirname "$(realpath "$0")")/../lib/servers.sh"

# ---------------------------------------------------------------- helpers
ensure_packages() {   # $1: pgctl|patroni
  local b pkgs=()
  for b in "$PGBIN"/{initdb,pg_ctl,pg_isready,psql,pg_basebackup,pg_rewind}; do
    [[ -x $b ]] || pkgs+=(postgresql-15)
  done
  if [[ $1 == patroni ]]; then
    [[ -x /usr/bin/patroni ]] || pkgs+=(patroni)
    [[ -x /usr/bin/etcd ]] || pkgs+=(etcd-server)
    /usr/bin/python3 -c 'import etcd' 2>/dev/null || pkgs+=(python3-etcd)
    command -v curl >/dev/null || pkgs+=(curl)
  fi
  install_packages --no-install-recommends "${pkgs[@]}"
}

now_us() { echo "${EPOCHREALTIME/./}"; }
ms_since() { echo $(( ($(now_us) - $1) / 1000 )); }

other() { echo $((3 - $1)); }
node_dir() { echo "$DIR/node$1"; }
node_sock() { echo "$DIR/sock$1"; }
node_port() { local v="PORT$1"; echo "${!v}"; }
node_pid() { head -n1 "$DIR/node$1/postmaster.pid" 2>/dev/null || true; }
node_alive() { alive "$(node_pid "$1")" '^postgres$'; }
url() { echo "postgresql://sqlock:$PW@127.0.0.1:$(node_port "$1")/sqlock_test"; }

# psql as the bootstrap superuser over node $1's unix socket; extra args follow.
# synchronous_commit=local: our own commits never wait for a standby that may be gone.
psql_node() {
  local n=$1; shift
  PGOPTIONS='-c synchronous_commit=local' PGCONNECT_TIMEOUT=5 \
    "$PGBIN/psql" -qAtX -v ON_ERROR_STOP=1 -h "$(node_sock "$n")" -p "$(node_port "$n")" \
    -U postgres -d postgres "$@"
}

ready() { "$PGBIN/pg_isready" -q -t 2 -h 127.0.0.1 -p "$(node_port "$1")"; }

# Wait (bounded) until node $1 accepts connections; 1 if it exited or took too long.
try_ready() {
  local deadline=$((SECONDS + WAIT_SECS)) t0=$SECONDS
  until ready "$1"; do
    ((SECONDS < deadline)) || { say "node$1 not ready after ${WAIT_SECS}s (log: $DIR/node$1.log)"; return 1; }
    ((SECONDS < t0 + 5)) || node_alive "$1" || { say "node$1 exited during startup (log: $DIR/node$1.log)"; return 1; }
    sleep 0.1
  done
}
wait_ready() { try_ready "$1" || exit 1; }

# Wait until node $1 (primary) reports standby1 with state streaming and sync_state $2 (regex).
wait_sync() {
  local want=$2 deadline=$((SECONDS + WAIT_SECS)) got=
  while :; do
    got=$(psql_node "$1" -c "SELECT state || '/' || sync_state FROM pg_stat_replication
                             WHERE application_name = 'standby1'" 2>/dev/null || true)
    [[ $got =~ ^streaming/($want)$ ]] && return 0
    ((SECONDS < deadline)) || die "standby1 not streaming/$want on node$1 after ${WAIT_SECS}s (got '${got:-nothing}')"
    sleep 0.1
  done
}

in_recovery() { psql_node "$1" -c "SELECT pg_is_in_recovery()" 2>/dev/null; }

load_state() {
  [[ -f $DIR/cluster.state ]] || die "no cluster in $DIR (run start first)"
  # shellcheck disable=SC1091
  source "$DIR/cluster.state"
}

save_state() {
  (umask 077; cat >"$DIR/cluster.state.tmp") <<EOF
MANAGER=$MANAGER
PW=$PW
RPW=$RPW
PORT1=$PORT1
PORT2=$PORT2
PRIMARY=$PRIMARY
FAILOVERS=$FAILOVERS
LAST_CRASH_AT=$LAST_CRASH_AT
ETCD_PORT=${ETCD_PORT:-}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-}
REST1=${REST1:-}
REST2=${REST2:-}
EOF
  mv -f "$DIR/cluster.state.tmp" "$DIR/cluster.state"
}

write_env() {
  local p=$PRIMARY s; s=$(other "$p")
  local up=0
  node_alive "$s" && up=1
  (umask 077; cat >"$DIR/env.sh.tmp") <<EOF
export SQLOCK_CLUSTER_PG_PRIMARY_URL='$(url "$p")'
export SQLOCK_CLUSTER_PG_STANDBY_URL='$(url "$s")'
export SQLOCK_CLUSTER_PG_MULTI_URL='postgresql://sqlock:$PW@127.0.0.1:$PORT1,127.0.0.1:$PORT2/sqlock_test'
export SQLOCK_CLUSTER_PG_NODE1_URL='$(url 1)'
export SQLOCK_CLUSTER_PG_NODE2_URL='$(url 2)'
export SQLOCK_CLUSTER_PG_PRIMARY_NODE=$p
export SQLOCK_CLUSTER_PG_STANDBY_NODE=$s
export SQLOCK_CLUSTER_PG_PRIMARY_PORT=$(node_port "$p")
export SQLOCK_CLUSTER_PG_STANDBY_PORT=$(node_port "$s")
export SQLOCK_CLUSTER_PG_PRIMARY_PID=$(node_pid "$p")
export SQLOCK_CLUSTER_PG_STANDBY_PID=$(node_pid "$s")
export SQLOCK_CLUSTER_PG_PRIMARY_DATA=$(printf %q "$(node_dir "$p")")
export SQLOCK_CLUSTER_PG_STANDBY_DATA=$(printf %q "$(node_dir "$s")")
export SQLOCK_CLUSTER_PG_STANDBY_UP=$up
export SQLOCK_CLUSTER_PG_FAILOVERS=$FAILOVERS
export SQLOCK_CLUSTER_PG_LAST_CRASH_AT=$LAST_CRASH_AT
export SQLOCK_CLUSTER_PG_MANAGER=$MANAGER
export SQLOCK_CLUSTER_PG_DIR=$(printf %q "$DIR")
EOF
  mv -f "$DIR/env.sh.tmp" "$DIR/env.sh"
}

# Settings that differ per node; postgresql.conf includes node.conf, and pg_basebackup /
# pg_rewind copy the other node's, so it is rewritten after every copy.
write_node_conf() {
  local n=$1
  cat >"$(node_dir "$n")/node.conf" <<EOF
# pg_replica.sh: node$n
port = $(node_port "$n")
unix_socket_directories = '$(node_sock "$n")'
cluster_name = 'node$n'
EOF
  chown "$PG_OS_USER:" "$(node_dir "$n")/node.conf"
}

# Make node $1 a standby of node $2: standby.signal + primary_conninfo in postgresql.auto.conf
# (replacing any copied from the other node).
make_standby_conf() {
  local n=$1 p=$2 d auto; d=$(node_dir "$n"); auto=$d/postgresql.auto.conf
  touch "$auto"
  sed -i -e '/^primary_conninfo/d' -e '/^primary_slot_name/d' "$auto"
  echo "primary_conninfo = 'host=127.0.0.1 port=$(node_port "$p") user=replicator password=$RPW application_name=standby1'" >>"$auto"
  : >"$d/standby.signal"
  chown "$PG_OS_USER:" "$auto" "$d/standby.signal"
  chmod 600 "$auto"
  write_node_conf "$n"
}

start_node() {
  : >>"$DIR/node$1.log"; chown "$PG_OS_USER:" "$DIR/node$1.log"
  as_pg "$PGBIN/pg_ctl" start -W -D "$(node_dir "$1")" -l "$DIR/node$1.log" >/dev/null
}

basebackup() {   # node-to-create source-node
  local d; d=$(node_dir "$1")
  rm -rf "$d"; mkdir -m 700 "$d"; chown "$PG_OS_USER:" "$d"
  as_pg env PGPASSWORD="$RPW" "$PGBIN/pg_basebackup" -D "$d" \
    -d "host=127.0.0.1 port=$(node_port "$2") user=replicator application_name=standby1" \
    -X stream -c fast -R >>"$DIR/node$1.log" 2>&1 || die "pg_basebackup of node$2 failed (log: $DIR/node$1.log)"
  make_standby_conf "$1" "$2"
}

# Stop postmaster of node $1: pg_ctl -m fast, then -m immediate, then SIGKILL of the
# postmaster and its children. Handles a SIGSTOPped server.
stop_node() {
  local n=$1 pid d; d=$(node_dir "$n"); pid=$(node_pid "$n")
  alive "$pid" '^postgres$' || return 0
  signal_tree CONT "$pid"
  as_pg "$PGBIN/pg_ctl" stop -D "$d" -m fast -w -t 20 >/dev/null 2>&1 || true
  wait_gone "$pid" 2 '^postgres$' && return 0
  say "node$n did not stop with -m fast; -m immediate"
  stop_process "node$n" "$pid" '^postgres$' 2 as_pg "$PGBIN/pg_ctl" stop -D "$d" -m immediate -w -t 10
}

# Stop a helper daemon (patroni, etcd) whose pid is in file $1, comm regex $2: SIGTERM, SIGKILL
# if not gone within 30 s.
stop_daemon() {
  local pid; pid=$(cat "$1" 2>/dev/null || true)
  stop_process "$(basename "$1" .pid)" "$pid" "$2" 30 kill -TERM "$pid"
  rm -f "$1"
}

# ---------------------------------------------------------------- pgctl manager
pgctl_start() {
  # --- primary
  local d1; d1=$(node_dir 1)
  mkdir -m 700 "$d1" "$DIR/sock1" "$DIR/sock2"
  chown "$PG_OS_USER:" "$d1" "$DIR/sock1" "$DIR/sock2"
  : >"$DIR/node1.log"; chown "$PG_OS_USER:" "$DIR/node1.log"
  # TCP: scram (wrong passwords fail; initdb's pg_hba also allows replication from 127.0.0.1);
  # unix socket: trust, for bootstrapping (socket dirs are 0700, owner-only).
  as_pg "$PGBIN/initdb" -D "$d1" -U postgres --auth-host=scram-sha-256 --auth-local=trust \
    --encoding=UTF8 --locale=C >>"$DIR/node1.log" 2>&1 || die "initdb failed (log: $DIR/node1.log)"
  cat >>"$d1/postgresql.conf" <<EOF
# --- pg_replica.sh (both nodes)
listen_addresses = '127.0.0.1'
max_connections = 200
password_encryption = 'scram-sha-256'
wal_level = replica
max_wal_senders = 10
wal_keep_size = '256MB'
wal_log_hints = on                 # for pg_rewind
hot_standby = on
# A standby whose primary is gone sleeps this long between attempts to fetch WAL; a promote
# request that lands in that sleep was once served only when it ended (5 s, the default, in a
# CI failover: crash to writable primary 5349 ms instead of ~300 ms).
wal_retrieve_retry_interval = '100ms'
synchronous_commit = on
synchronous_standby_names = '$SYNC_NAMES'
include = 'node.conf'              # port, socket dir, cluster_name
EOF
  write_node_conf 1
  start_node 1
  wait_ready 1
  psql_node 1 -c "CREATE ROLE sqlock LOGIN SUPERUSER PASSWORD '$PW'" \
    -c "CREATE ROLE replicator LOGIN REPLICATION PASSWORD '$RPW'" \
    -c "CREATE DATABASE sqlock_test OWNER sqlock" >/dev/null

  # --- standby
  basebackup 2 1
  start_node 2
  wait_ready 2
  wait_sync 1 sync
}

pgctl_failover() {
  local old=$PRIMARY new t0 t ms_crash ms_clear ms_promote ms_check
  new=$(other "$old")
  # shellcheck disable=SC2015  # deliberately: die/ignore if either part fails
  node_alive "$new" && [[ $(in_recovery "$new") == t ]] ||
    die "node$new is not a running standby: nothing to promote (rejoin first)"
  # --- crash the primary (kill -CONT first: it may be SIGSTOPped by a test)
  t0=$(now_us)
  LAST_CRASH_AT=$EPOCHREALTIME
  local pid; pid=$(node_pid "$old")
  if alive "$pid" '^postgres$'; then
    signal_tree CONT "$pid"
    as_pg "$PGBIN/pg_ctl" stop -D "$(node_dir "$old")" -m immediate -w -t 30 >/dev/null ||
      die "could not crash node$old"
  fi
  ms_crash=$(ms_since "$t0")
  [[ -n ${FAILOVER_DELAY:-} ]] && sleep "$FAILOVER_DELAY"
  # --- no sync standby will exist after the promotion: drop the requirement before it
  # (ALTER SYSTEM works on a standby), so no write on the new primary ever waits for one.
  t=$(now_us)
  psql_node "$new" -c "ALTER SYSTEM SET synchronous_standby_names = ''" -c "SELECT pg_reload_conf()" >/dev/null
  ms_clear=$(ms_since "$t")
  # --- promote
  t=$(now_us)
  as_pg "$PGBIN/pg_ctl" promote -D "$(node_dir "$new")" -w -t "$WAIT_SECS" >/dev/null ||
    die "pg_ctl promote of node$new failed (log: $DIR/node$new.log)"
  local deadline=$((SECONDS + WAIT_SECS))
  until [[ $(in_recovery "$new") == f ]]; do
    ((SECONDS < deadline)) || die "node$new still in recovery ${WAIT_SECS}s after promote"
    sleep 0.05
  done
  ms_promote=$(ms_since "$t")
  # --- check: the setting is in effect and a write commits (does not wait for a standby)
  t=$(now_us)
  until [[ -z $(psql_node "$new" -c "SHOW synchronous_standby_names") ]]; do
    ((SECONDS < deadline)) || die "node$new: synchronous_standby_names still set"
    sleep 0.05
  done
  timeout 10 "$PGBIN/psql" -qAtX -v ON_ERROR_STOP=1 "$(url "$new")" \
    -c "CREATE TEMP TABLE pg_replica_check (x int); INSERT INTO pg_replica_check VALUES (1)" \
    -c "SELECT txid_current()" >/dev/null || die "node$new: a write did not commit within 10s"
  ms_check=$(ms_since "$t")
  PRIMARY=$new FAILOVERS=$((FAILOVERS + 1))
  save_state; write_env
  echo "failover: crash of node$old ${ms_crash} ms, sync requirement dropped on node$new ${ms_clear} ms," \
       "promotion ${ms_promote} ms, write check ${ms_check} ms; crash to writable primary $(ms_since "$t0") ms"
}

pgctl_rejoin() {
  local p=$PRIMARY old t0 how
  old=$(other "$p")
  # shellcheck disable=SC2015  # deliberately: die/ignore if either part fails
  node_alive "$p" && [[ $(in_recovery "$p") == f ]] || die "node$p is not a running primary"
  if node_alive "$old"; then
    [[ $(in_recovery "$old") == t ]] || die "node$old is running and not a standby (split brain?)"
    say "node$old is already a standby"
  else
    t0=$(now_us)
    # pg_rewind reads the source's timeline from its control file, which a promotion updates
    # only with its first checkpoint (spread out): force one, or the rewind is wrong.
    psql_node "$p" -c CHECKPOINT >/dev/null
    # pg_rewind runs crash recovery on the target (single-user postgres) first.
    : >>"$DIR/node$old.log"
    how=pg_rewind
    if ! as_pg "$PGBIN/pg_rewind" --target-pgdata="$(node_dir "$old")" \
         --source-server="host=$(node_sock "$p") port=$(node_port "$p") user=postgres dbname=postgres" \
         >>"$DIR/node$old.log" 2>&1; then
      say "pg_rewind failed (log: $DIR/node$old.log)"
      how=
    else
      make_standby_conf "$old" "$p"
      start_node "$old"
      try_ready "$old" || { stop_node "$old"; how=; }
    fi
    if [[ -z $how ]]; then
      say "rejoining node$old with a fresh pg_basebackup instead"
      basebackup "$old" "$p"
      start_node "$old"
      wait_ready "$old"
      how=pg_basebackup
    fi
  fi
  # The standby streams (async, the primary has no sync names); then require it again.
  wait_sync "$p" 'async|sync'
  psql_node "$p" -c "ALTER SYSTEM RESET synchronous_standby_names" -c "SELECT pg_reload_conf()" >/dev/null
  wait_sync "$p" sync
  write_env
  [[ -n ${t0:-} ]] && echo "rejoin: node$old is a sync standby of node$p again ($how, $(ms_since "$t0") ms)"
  return 0
}

# ---------------------------------------------------------------- patroni manager
# Start a daemon as the PostgreSQL OS user, detached; $! is its pid (setsid and setpriv exec).
launch_as_pg() {
  local log=$1; shift
  if [[ $EUID -eq 0 ]]; then
    (cd / && exec setsid setpriv --reuid="$PG_OS_USER" --regid="$PG_OS_USER" --init-groups -- "$@" \
       </dev/null >>"$log" 2>&1) &
  else
    (cd / && exec setsid "$@" </dev/null >>"$log" 2>&1) &
  fi
}

patroni_conf() {   # node
  local n=$1 rest="REST$1"
  cat >"$DIR/patroni$n.yml" <<YAML
scope: sqlock
namespace: /pg_replica/
name: node$n
log: {level: INFO}
restapi:
  listen: 127.0.0.1:${!rest}
  connect_address: 127.0.0.1:${!rest}
etcd3:
  host: 127.0.0.1:$ETCD_PORT
bootstrap:
  dcs:
    ttl: 20
    loop_wait: 1
    retry_timeout: 5
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    primary_start_timeout: 0
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 10
        wal_keep_size: 256MB
        wal_retrieve_retry_interval: 100ms
        max_connections: 200
        password_encryption: scram-sha-256
        synchronous_commit: 'on'
  initdb:
    - encoding: UTF8
    - locale: C
    - auth-host: scram-sha-256
    - auth-local: trust
postgresql:
  listen: 127.0.0.1:$(node_port "$n")
  connect_address: 127.0.0.1:$(node_port "$n")
  data_dir: $(node_dir "$n")
  bin_dir: $PGBIN
  pgpass: $DIR/patroni.d/pgpass$n
  use_unix_socket: true
  basebackup:
    checkpoint: fast             # the default, spread, takes most of a minute
  authentication:
    superuser: {username: postgres, password: '$RPW'}
    replication: {username: replicator, password: '$RPW'}
    rewind: {username: postgres, password: '$RPW'}
  parameters:
    unix_socket_directories: '$(node_sock "$n")'
    cluster_name: node$n
  pg_hba:
    - local all all trust
    - local replication all trust
    - host all all 127.0.0.1/32 scram-sha-256
    - host replication replicator 127.0.0.1/32 scram-sha-256
YAML
  chown "$PG_OS_USER:" "$DIR/patroni$n.yml"; chmod 600 "$DIR/patroni$n.yml"
}

patroni_launch() {   # node
  : >>"$DIR/patroni$1.log"; chown "$PG_OS_USER:" "$DIR/patroni$1.log"
  launch_as_pg "$DIR/patroni$1.log" /usr/bin/patroni "$DIR/patroni$1.yml"
  echo $! >"$DIR/patroni$1.pid"
}

# The node whose Patroni REST API says it is the leader (200 on /primary), or nothing.
patroni_leader() {
  local n rest
  for n in 1 2; do
    rest="REST$n"
    [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:${!rest}/primary" 2>/dev/null) == 200 ]] &&
      { echo "$n"; return 0; }
  done
  return 0
}

# Wait until node $1 has node $2 streaming to it as its sync standby (Patroni's
# application_name is the member name), and Patroni knows it: the sync standby is only a
# failover candidate once it is in the DCS's /sync key, which Patroni writes a second or two
# after postgres reports it sync. Crash the primary before that, and Patroni restarts it.
patroni_wait_sync() {
  local p=$1 s=$2 deadline=$((SECONDS + WAIT_SECS)) got='' rest="REST$2" http=''
  while :; do
    got=$(psql_node "$p" -c "SELECT state || '/' || sync_state FROM pg_stat_replication
                             WHERE application_name = 'node$s'" 2>/dev/null || true)
    [[ $got == streaming/sync ]] &&
      http=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:${!rest}/sync" || true)
    [[ $got == streaming/sync && $http == 200 ]] && return 0
    ((SECONDS < deadline)) ||
      die "node$s not streaming/sync on node$p, or not Patroni's sync standby, after ${WAIT_SECS}s (got '${got:-nothing}', /sync ${http:-?})"
    sleep 0.2
  done
}

patroni_start() {
  # Patroni creates no directories in DIR (not its to write): empty data dirs, pgpass dir.
  local d
  for d in node1 node2 sock1 sock2 etcd patroni.d; do
    mkdir -m 700 "$DIR/$d"; chown "$PG_OS_USER:" "$DIR/$d"
  done
  ETCD_PORT=$(pick_port "$PORT1" "$PORT2"); ETCD_PEER_PORT=$(pick_port "$PORT1" "$PORT2" "$ETCD_PORT")
  REST1=$(pick_port "$PORT1" "$PORT2" "$ETCD_PORT" "$ETCD_PEER_PORT")
  REST2=$(pick_port "$PORT1" "$PORT2" "$ETCD_PORT" "$ETCD_PEER_PORT" "$REST1")
  save_state
  : >"$DIR/etcd.log"; chown "$PG_OS_USER:" "$DIR/etcd.log"
  launch_as_pg "$DIR/etcd.log" /usr/bin/etcd --name e1 --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "e1=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state new
  echo $! >"$DIR/etcd.pid"
  local deadline=$((SECONDS + WAIT_SECS))
  until curl -sf --max-time 1 "http://127.0.0.1:$ETCD_PORT/health" | grep -q '"health":"true"'; do
    alive "$(cat "$DIR/etcd.pid")" '^etcd$' || die "etcd exited during startup"
    ((SECONDS < deadline)) || die "etcd not healthy after ${WAIT_SECS}s"
    sleep 0.2
  done
  patroni_conf 1; patroni_conf 2
  patroni_launch 1
  deadline=$((SECONDS + WAIT_SECS))
  until [[ $(patroni_leader) == 1 ]]; do
    alive "$(cat "$DIR/patroni1.pid")" '^patroni$' || die "patroni (node1) exited during bootstrap"
    ((SECONDS < deadline)) || die "node1 not the leader after ${WAIT_SECS}s"
    sleep 0.2
  done
  psql_node 1 -c "CREATE ROLE sqlock LOGIN SUPERUSER PASSWORD '$PW'" \
    -c "CREATE DATABASE sqlock_test OWNER sqlock" >/dev/null
  patroni_launch 2
  patroni_wait_sync 1 2
}

patroni_failover() {
  local old=$PRIMARY new t0 t ms_crash ms_promote ms_check
  new=$(other "$old")
  # shellcheck disable=SC2015  # deliberately: die/ignore if either part fails
  node_alive "$new" && [[ $(in_recovery "$new") == t ]] ||
    die "node$new is not a running standby: nothing to promote (rejoin first)"
  t0=$(now_us)
  LAST_CRASH_AT=$EPOCHREALTIME
  # Crash the primary's postgres. Its Patroni notices; with primary_start_timeout 0 it gives
  # up the leader key instead of restarting it, and the sync standby's Patroni promotes.
  local pid; pid=$(node_pid "$old")
  signal_tree CONT "$pid"
  as_pg "$PGBIN/pg_ctl" stop -D "$(node_dir "$old")" -m immediate -w -t 30 >/dev/null ||
    die "could not crash node$old"
  ms_crash=$(ms_since "$t0")
  t=$(now_us)
  local deadline=$((SECONDS + WAIT_SECS))
  until [[ $(in_recovery "$new" || true) == f ]]; do
    ((SECONDS < deadline)) || die "node$new not promoted by Patroni after ${WAIT_SECS}s"
    sleep 0.05
  done
  ms_promote=$(ms_since "$t")
  t=$(now_us)
  until timeout 5 "$PGBIN/psql" -qAtX "$(url "$new")" \
          -c "CREATE TEMP TABLE pg_replica_check (x int); INSERT INTO pg_replica_check VALUES (1)" \
          -c "SELECT txid_current()" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "node$new: no write committed within ${WAIT_SECS}s"
    sleep 0.05
  done
  ms_check=$(ms_since "$t")
  PRIMARY=$new FAILOVERS=$((FAILOVERS + 1))
  save_state; write_env
  echo "failover (patroni): crash of node$old ${ms_crash} ms, until Patroni promoted node$new ${ms_promote} ms," \
       "until a write committed ${ms_check} ms; crash to writable primary $(ms_since "$t0") ms"
}

# Patroni rejoins the old primary by itself (pg_rewind); wait until it is the sync standby.
patroni_rejoin() {
  local p=$PRIMARY old t0; old=$(other "$p"); t0=$(now_us)
  alive "$(cat "$DIR/patroni$old.pid" 2>/dev/null)" '^patroni$' || patroni_launch "$old"
  patroni_wait_sync "$p" "$old"
  write_env
  echo "rejoin (patroni): node$old is a sync standby of node$p again (waited $(ms_since "$t0") ms)"
}

# ---------------------------------------------------------------- commands
do_stop() {
  [[ -d $DIR ]] || return 0
  local n pid
  # Patroni stops its postgres; a SIGSTOPped one would keep it waiting.
  for n in 1 2; do
    pid=$(node_pid "$n")
    if alive "$pid" '^postgres$'; then signal_tree CONT "$pid"; fi
  done
  for n in 1 2; do
    [[ -f $DIR/patroni$n.pid ]] && stop_daemon "$DIR/patroni$n.pid" '^patroni$'
  done
  for n in 2 1; do stop_node "$n"; done
  [[ -f $DIR/etcd.pid ]] && stop_daemon "$DIR/etcd.pid" '^etcd$'
  rm -f "$DIR/env.sh"
  return 0
}

do_start() {
  MANAGER=pgctl
  while (($#)); do
    case $1 in
      --manager) MANAGER=${2:-}; shift 2 ;;
      --manager=*) MANAGER=${1#*=}; shift ;;
      *) usage ;;
    esac
  done
  [[ $MANAGER =~ ^(pgctl|patroni)$ ]] || die "unknown manager '$MANAGER' (pgctl|patroni)"
  ensure_packages "$MANAGER"
  setup_users
  do_stop
  # Only remove what this script creates, never DIR itself.
  rm -rf "$DIR"/node1 "$DIR"/node2 "$DIR"/sock1 "$DIR"/sock2 "$DIR"/node{1,2}.log "$DIR"/etcd* \
    "$DIR"/patroni* "$DIR"/cluster.state "$DIR"/env.sh
  check_traversable
  check_dir_length 80   # $DIR/sock1/.s.PGSQL.PORT.lock
  PW=$(random_password)
  RPW=$(random_password)
  PORT1=$(pick_port); PORT2=$(pick_port "$PORT1")
  PRIMARY=1 FAILOVERS=0 LAST_CRASH_AT=
  trap 'start_failed "$DIR"/node1.log "$DIR"/node2.log "$DIR"/patroni1.log "$DIR"/patroni2.log "$DIR"/etcd.log' EXIT
  local t0; t0=$(now_us)
  save_state
  if [[ $MANAGER == pgctl ]]; then pgctl_start; else patroni_start; fi
  save_state; write_env
  trap - EXIT
  say "primary node1 :$PORT1, sync standby node2 :$PORT2 ($MANAGER, $(ms_since "$t0") ms)"
  echo "primary: $(url 1)"
  echo "standby: $(url 2)"
}

do_failover() {
  load_state
  if [[ $MANAGER == pgctl ]]; then pgctl_failover; else patroni_failover; fi
}

do_rejoin() {
  load_state
  if [[ $MANAGER == pgctl ]]; then pgctl_rejoin; else patroni_rejoin; fi
}

do_status() {
  load_state
  local n role
  echo "manager: $MANAGER, failovers: $FAILOVERS, primary per env.sh: node$PRIMARY"
  for n in 1 2; do
    if node_alive "$n"; then
      case $(in_recovery "$n" || echo "?") in t) role=standby ;; f) role=primary ;; *) role="not answering" ;; esac
      echo "node$n: port $(node_port "$n"), pid $(node_pid "$n"), $role"
      # shellcheck disable=SC2015  # deliberately: die/ignore if either part fails
      [[ $role == primary ]] && psql_node "$n" -F ' ' \
        -c "SELECT '  synchronous_standby_names = ''' || current_setting('synchronous_standby_names') || ''''" \
        -c "SELECT '  replica ' || application_name || ': ' || state || ', ' || sync_state ||
                   ', replay lag ' || coalesce(replay_lag::text, '0') FROM pg_stat_replication" || true
    else
      echo "node$n: port $(node_port "$n"), down"
    fi
  done
  if [[ $MANAGER == patroni ]]; then
    patronictl -c "$DIR/patroni1.yml" list 2>/dev/null || true
  fi
}

do_env() {
  load_state
  if [[ -f $DIR/env.sh ]] && node_alive "$PRIMARY"; then
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
  start)    do_start "$@" ;;
  stop)     setup_users; do_stop ;;
  failover) setup_users; do_failover ;;
  rejoin)   setup_users; do_rejoin ;;
  status)   setup_users; do_status ;;
  env)      do_env ;;
  run)      # [--manager M] -- CMD...: what precedes "--" goes to start
            while (($#)) && [[ $1 != -- ]]; do START_ARGS+=("$1"); shift; done
            do_run "$@" ;;
  *)        usage ;;
esac
