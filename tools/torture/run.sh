#!/usr/bin/env bash
# Fault-injection torture runs for sqlock (see tools/torture/README.md).
#
#   tools/torture/run.sh [--backend sqlite|postgresql|mysql|all|members] [--strategy S|all]
#                        [--nemesis LIST] [--processes N] [--duration SECS] [--ttl MS]
#                        [--hold MIN-MAX] [--seed N] [--interval MS] [--liveness-bound MS]
#                        [--renew on|off|mix] [--build DIR] [--keep]
#                        [--control skip-lock|ignore-tokens|quorum-minority]
#                        [--clock-step SECS] [--partition-ms MS]
#                        [--mode lock|leader|semaphore|rw|quorum] [--permits N] [--writer-share PCT]
#                        [--reapers N] [--min-grants N] [--member-kinds K,K,K]
#                        [--python-workers N]
#   tools/torture/run.sh --controls     the negative controls; exit 0 only if all are caught
#   tools/torture/run.sh --smoke [--backend B]
#                                       every (selected) backend x strategy, short (a few
#                                       minutes), two of the lock-mode workers in Python,
#                                       leader, semaphore, rw and quorum mode on every
#                                       backend, each run above its floor of grants; the
#                                       controls with SQLite; with members (a backend of its
#                                       own, in the default list): the quorum over separate
#                                       member servers, every member nemesis, and its control
#   tools/torture/run.sh --long [--backend B] [--strategy S] [--duration SECS]
#                                       every (selected) backend x strategy, 10 minutes each,
#                                       all nemeses mixed (members: the quorum over separate
#                                       servers, client and member nemeses mixed), then the
#                                       controls; a markdown table
#   tools/torture/run.sh --failover [--runs N] [--strategy S] [--resume-bound MS]
#                                       PostgreSQL primary + sync standby (tools/cluster/
#                                       pg_replica.sh), workers on the multi-host URL, the
#                                       primary crashed mid-run and the standby promoted, once
#                                       per strategy; N runs (5) in a row, each on a fresh
#                                       cluster; a cluster that cannot start fails the run
#
# --mode leader: the workers are sqlock::leader_election electors (unique_key, renewed) instead
# of mutexes; the checker adds rule leader-stop (README.md, "Leader mode").
# --mode semaphore: sqlock::semaphore with --permits N (2); --mode rw: sqlock::shared_mutex with
# --permits reader permits, --writer-share PCT (33) of the grants exclusive (README.md).
# --mode quorum: sqlock::quorum_mutex over three members, lock tables of their own on the
# backend's server (unique_key); the lock-mode rules (README.md, "Quorum mode").
# --mode quorum --backend members: the three members are three separate throwaway servers
# (--member-kinds, default postgresql,mysql,postgresql), each client reaching each member
# through a relay of its own, so that one member can fail alone (member nemeses below).
# --reapers N: N `sqlock reap` loops (as from N hosts' cron, back to back, no grace) run beside the
# workers, so that reaping races grants, renewals, takeovers and every fault (README.md).
# --python-workers N: the first N workers of each run are Python programs (py_worker.py over the
# package sqlock as built, BUILD/python), the others C++: one history, the same rules (lock mode
# only; not with session-kill, which needs the server session id the package does not expose).
# --min-grants N: a run with fewer grants fails (floor=grants<N); so does, always, a run in which
# a requested fault kind was never injected (floor=no-KIND). A run draws the kinds it has not
# injected yet first, and goes on past its duration (by it, or 30 s if longer) until each was.
# NEMESIS LIST: comma separated none|kill|stop|session-kill|crash|pause|clock|partition|migrate|mix
# (and failover, --failover only); migrate applies a migration the compatibility contract allows
# (a new table, a nullable column on the lock table) mid-run, as `sqlock migrate` would
# (sqlock_torture_migrate); a migration that fails fails the run (migrate=FAILED);
# "KIND:N" injects KIND at most N times. Prints one summary line per run; exits 1 if any run
# failed (for --controls: if a control was NOT caught), 2 on bad usage.
# With --backend members the server kinds give way to the member kinds (one member at a time):
# member-kill (crash one member's server, restart it), member-stop (SIGSTOP one member's server
# for 1.5 x TTL), member-clock (step one member's wall clock by +-clock-step, or back to 0),
# member-partition (cut one client, the holder if any, from one member for --partition-ms);
# kill and stop stay the clients' (stop pauses the holder); mix is all six.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TESTDB=$ROOT/tools/testdb.sh

BACKENDS=sqlite STRATEGIES=unique_key NEMESES=none PROCESSES='' DURATION=20 TTL=1500
HOLD=1-80 SEED=$((RANDOM * 32768 + RANDOM)) INTERVAL=2000 BOUND=3000 RENEW=mix
BUILD=$ROOT/build/ci KEEP=0 DURATION_SET=0 CONTROL=none MODE=single STOP_FACTOR=15
CLOCK_STEP=10 PARTITION_MS='' BACKENDS_SET=0 STRATEGIES_SET=0 RUNS=5 RESUME_BOUND='' TTL_SET=0
HOLD_SET=0 WORKER_MODE=lock PERMITS=2 WRITER_SHARE=33 REAPERS=0 MIN_GRANTS=0 PY_WORKERS=0
MEMBER_KINDS=postgresql,mysql,postgresql

usage() { sed -n '2,61p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "torture: $*" >&2; exit 2; }

while (($#)); do
  case $1 in
    --backend) BACKENDS=$2 BACKENDS_SET=1; shift ;;
    --strategy) STRATEGIES=$2 STRATEGIES_SET=1; shift ;;
    --clock-step) CLOCK_STEP=$2; shift ;;
    --partition-ms) PARTITION_MS=$2; shift ;;
    --nemesis) NEMESES=$2; shift ;;
    --processes) PROCESSES=$2; shift ;;
    --duration) DURATION=$2 DURATION_SET=1; shift ;;
    --ttl) TTL=$2 TTL_SET=1; shift ;;
    --hold) HOLD=$2 HOLD_SET=1; shift ;;
    --seed) SEED=$2; shift ;;
    --interval) INTERVAL=$2; shift ;;
    --liveness-bound) BOUND=$2; shift ;;
    --renew) RENEW=$2; shift ;;
    --build) BUILD=$(realpath "$2"); shift ;;
    --keep) KEEP=1 ;;
    --control) CONTROL=$2; shift ;;
    --controls) MODE=controls ;;
    --smoke) MODE=smoke ;;
    --long) MODE=long ;;
    --failover) MODE=failover ;;
    --runs) RUNS=$2; shift ;;
    --mode) WORKER_MODE=$2; shift ;;
    --permits) PERMITS=$2; shift ;;
    --writer-share) WRITER_SHARE=$2; shift ;;
    --resume-bound) RESUME_BOUND=$2; shift ;;
    --reapers) REAPERS=$2; shift ;;
    --min-grants) MIN_GRANTS=$2; shift ;;
    --member-kinds) MEMBER_KINDS=$2; shift ;;
    --python-workers) PY_WORKERS=$2; shift ;;
    -h|--help) usage ;;
    *) echo "torture: unknown option $1" >&2; usage ;;
  esac
  shift
done
[[ $BACKENDS == all ]] && BACKENDS=sqlite,postgresql,mysql
[[ $STRATEGIES == all ]] && STRATEGIES=unique_key,select_for_update,optimistic_version
[[ $HOLD =~ ^([0-9]+)-([0-9]+)$ ]] || die "--hold wants MIN-MAX percent of the TTL"
[[ $CONTROL =~ ^(none|skip-lock|ignore-tokens|quorum-minority)$ ]] || die "bad --control $CONTROL"
[[ $CLOCK_STEP =~ ^[1-9][0-9]*$ ]] || die "--clock-step wants whole seconds > 0"
[[ -z $PARTITION_MS || $PARTITION_MS =~ ^[1-9][0-9]*$ ]] || die "--partition-ms wants MS > 0"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "--runs wants N > 0"
[[ $WORKER_MODE =~ ^(lock|leader|semaphore|rw|quorum)$ ]] ||
  die "--mode wants lock, leader, semaphore, rw or quorum"
[[ $PERMITS =~ ^[1-9][0-9]*$ ]] || die "--permits wants N > 0"
if [[ ! $WRITER_SHARE =~ ^[0-9]+$ ]] || ((WRITER_SHARE > 100)); then die "--writer-share wants 0-100"; fi
[[ $WORKER_MODE =~ ^(lock|leader)$ || $CONTROL =~ ^(none|quorum-minority)$ ]] ||
  die "--control: the negative controls run in lock mode"
[[ $WORKER_MODE == quorum || $CONTROL != quorum-minority ]] ||
  die "--control quorum-minority: a quorum mode control (--mode quorum)"
[[ $WORKER_MODE == quorum || $MODE =~ ^(smoke|long)$ || ! ,$BACKENDS, =~ ,members, ]] ||
  die "--backend members: separate member servers are quorum mode's (--mode quorum)"
[[ $MEMBER_KINDS =~ ^(postgresql|mysql),(postgresql|mysql),(postgresql|mysql)$ ]] ||
  die "--member-kinds wants three of postgresql|mysql, comma separated"
[[ $WORKER_MODE != leader || $STRATEGIES == unique_key ]] ||
  die "--mode leader: leader_election is built on unique_key (--strategy unique_key)"
[[ $WORKER_MODE != quorum || $STRATEGIES == unique_key ]] ||
  die "--mode quorum: a quorum lock is a lease on each member (--strategy unique_key)"
[[ -z $RESUME_BOUND || $RESUME_BOUND =~ ^[1-9][0-9]*$ ]] || die "--resume-bound wants MS > 0"
[[ $REAPERS =~ ^[0-9]+$ ]] || die "--reapers wants N >= 0"
[[ $MIN_GRANTS =~ ^[0-9]+$ ]] || die "--min-grants wants N >= 0"
((REAPERS == 0)) || [[ ! ,$BACKENDS, =~ ,members, ]] ||
  die "--reapers: not with --backend members (a reaper has one database)"
[[ $PY_WORKERS =~ ^[0-9]+$ ]] || die "--python-workers wants N >= 0"
if ((PY_WORKERS)); then
  [[ $MODE != smoke ]] || die "--python-workers: the smoke sets its own"
  [[ $WORKER_MODE == lock && $CONTROL == none ]] ||
    die "--python-workers: lock mode, no control (py_worker.py speaks lock mode only)"
  [[ ,$NEMESES, != *,session-kill,* && ,$NEMESES, != *,mix,* ]] ||
    die "--python-workers: not with session-kill (or mix)"
fi
WORKER=$BUILD/tools/torture/sqlock_torture_worker
CHECK=$BUILD/tools/torture/sqlock_torture_check
MIGRATOR=$BUILD/tools/torture/sqlock_torture_migrate
CLI=$BUILD/sqlock
for b in "$WORKER" "$CHECK" "$CLI"; do
  [[ -x $b ]] || die "$b missing: build first (cmake --preset ci && cmake --build --preset ci)"
done
# The Python worker: Debian's python3 and the package as built (checked when a run uses it).
PY_WORKER=(env "PYTHONPATH=$BUILD/python" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3
           "$HERE/py_worker.py")
need_python() {
  env "PYTHONPATH=$BUILD/python" /usr/bin/python3 -c 'import sqlock' 2>/dev/null ||
    die "--python-workers: the package sqlock is not built in $BUILD/python"
}
((PY_WORKERS == 0)) || need_python

WORK=$(mktemp -d /tmp/tort-XXXX)   # short: server unix sockets live below it
chmod 755 "$WORK"
DB=$WORK/db
DB_STARTED=0
# --failover: the replicated cluster of the current run (tools/cluster/pg_replica.sh).
REPLICA=$ROOT/tools/cluster/pg_replica.sh
CLUSTER='' CLUSTER_STARTED=0 FAILOVER_FAILED=0 RUN_LABEL=
RANDOM=$SEED

# ------------------------------------------------------------------------ helpers
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
note() { "$WORKER" note "$RUN/harness.log" "$@"; }
# State letter of a process (R, S, T, Z...), empty when gone.
proc_state() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0; s=${s##*) }; echo "${s%% *}"; }

# Every iptables rule this process adds carries this comment; cleanup deletes exactly those.
RULE_TAG="sqlock-torture-$$"
cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do [[ -n $p ]] && kill -KILL "$p" 2>/dev/null || true; done
  ((${MIGRATE_PID:-0})) && kill -KILL "$MIGRATE_PID" 2>/dev/null || true
  stop_reapers
  stop_relays
  remove_rules
  if ((DB_STARTED)); then "$TESTDB" stop "$DB" >/dev/null 2>&1 || true; fi
  stop_members
  if ((CLUSTER_STARTED)); then "$REPLICA" stop "$CLUSTER" >/dev/null 2>&1 || true; fi
  if ((KEEP)); then echo "torture: kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The clock nemesis steps the servers' wall clock through tools/testdb.sh (a clock shim in
# PostgreSQL, libfaketime in MariaDB): the servers must have been
# started with it (and are restarted with it after a crash), so decide before the first start.
CLOCK_FILE=$DB/faketime
if [[ $MODE == long || ,$NEMESES, =~ ,(clock|mix)(:[0-9]+)?, ]]; then
  export TESTDB_FAKETIME_FILE=$CLOCK_FILE
fi

ensure_servers() {
  ((DB_STARTED)) && return 0
  mkdir -p "$DB" && chmod 755 "$DB"
  [[ -n ${TESTDB_FAKETIME_FILE:-} ]] && set_clock 0 && chmod 644 "$CLOCK_FILE".{postgres,mariadb}
  "$TESTDB" start "$DB" >/dev/null
  DB_STARTED=1
  # shellcheck disable=SC1091
  source "$DB/env.sh"
}

# --backend members: three separate servers, one per directory $WORK/mK (tools/testdb.sh with
# TESTDB_ONLY), each with a wall-clock offset file of its own ($WORK/mK/faketime.*: the
# member-clock nemesis steps one member alone). Started once, for every run of this process.
MEMBERS_STARTED=0
declare -a MEMBER_DIR=() MEMBER_KIND=() MEMBER_URL=() MEMBER_PORT=() MEMBER_OFFSET=()
member_server() { [[ ${MEMBER_KIND[$1]} == postgresql ]] && echo postgres || echo mariadb; }
# testdb.sh for member M: that server alone, with its own clock file.
member_testdb() {  # member_testdb M COMMAND [ARG...]
  local m=$1 cmd=$2; shift 2
  TESTDB_ONLY=$(member_server "$m") TESTDB_FAKETIME_FILE=${MEMBER_DIR[m]}/faketime \
    "$TESTDB" "$cmd" "${MEMBER_DIR[m]}" "$@"
}
ensure_members() {
  ((MEMBERS_STARTED)) && return 0
  local m kinds
  IFS=, read -ra kinds <<<"$MEMBER_KINDS"
  for m in 0 1 2; do
    MEMBER_KIND[m]=${kinds[m]} MEMBER_DIR[m]=$WORK/m$m MEMBER_OFFSET[m]=0
    mkdir -p "${MEMBER_DIR[m]}" && chmod 755 "${MEMBER_DIR[m]}"
    MEMBERS_STARTED=1   # from here on, cleanup stops what was started
    member_testdb "$m" start >/dev/null
    MEMBER_URL[m]=$(
      # shellcheck disable=SC1091
      source "${MEMBER_DIR[m]}/env.sh"
      [[ ${MEMBER_KIND[m]} == postgresql ]] && echo "$SQLOCK_TEST_POSTGRES_URL" || echo "$SQLOCK_TEST_MYSQL_URL"
    )
    MEMBER_PORT[m]=${MEMBER_URL[m]##*:} MEMBER_PORT[m]=${MEMBER_PORT[m]%%/*}
  done
  # Each member migrated once, by the CLI (the workers open them by URL and migrate nothing).
  "$CLI" migrate --url "${MEMBER_URL[0]}" --url "${MEMBER_URL[1]}" --url "${MEMBER_URL[2]}" >/dev/null
}
stop_members() {
  local m
  ((MEMBERS_STARTED)) || return 0
  for m in "${!MEMBER_DIR[@]}"; do member_testdb "$m" stop >/dev/null 2>&1 || true; done
  MEMBERS_STARTED=0
}
# Member M's server processes as they are now (PostgreSQL: postmaster and its children).
member_pids() {
  local pid dir=${MEMBER_DIR[$1]}
  if [[ ${MEMBER_KIND[$1]} == postgresql ]]; then
    pid=$(head -n1 "$dir/pg/postmaster.pid")
    # shellcheck disable=SC2046  # a list of pids
    echo "$pid" $(cat /proc/"$pid"/task/*/children 2>/dev/null || true)
  else
    cat "$dir/mariadb/mysqld.pid"
  fi
}
# Member M's offset file(s): testdb.sh reads .postgres for PostgreSQL, .mariadb for MariaDB.
set_member_clock() {  # set_member_clock M OFFSET
  local f
  f=${MEMBER_DIR[$1]}/faketime.$(member_server "$1")
  printf '%+d\n' "$2" >"$f.new" && chmod 644 "$f.new" && mv -f "$f.new" "$f"
  MEMBER_OFFSET[$1]=$2
}

# Relays: client slot K reaches member M through a relay of its own (worker "relay"), so that
# one client can be cut off from one member (freeze it) while the rest goes on; without
# iptables, without root. Started per run for its slots, stopped at its end.
declare -A RELAY_PID=() RELAY_PORT=()
start_relays() {  # start_relays N
  local k m f give_up
  for ((k = 0; k < $1; k++)); do
    for m in 0 1 2; do
      f=$RUN/relay-$k-$m.port
      "$WORKER" relay --to "${MEMBER_PORT[m]}" --port-file "$f" 2>>"$RUN/relay.err" &
      RELAY_PID[$k,$m]=$!
    done
  done
  give_up=$(($(now_ms) + 10000))
  for ((k = 0; k < $1; k++)); do
    for m in 0 1 2; do
      f=$RUN/relay-$k-$m.port
      until [[ -s $f ]]; do
        (($(now_ms) < give_up)) && [[ -n $(proc_state "${RELAY_PID[$k,$m]}") ]] ||
          die "relay $k-$m did not start (see $RUN/relay.err)"
        sleep 0.01
      done
      RELAY_PORT[$k,$m]=$(<"$f")
    done
  done
}
stop_relays() {
  local key
  for key in "${!RELAY_PID[@]}"; do
    kill -KILL "${RELAY_PID[$key]}" 2>/dev/null || true
    wait "${RELAY_PID[$key]}" 2>/dev/null || true
  done
  RELAY_PID=() RELAY_PORT=()
}
# Slot K's member URLs, through its relays, comma separated.
slot_members() {
  local m url list=
  for m in 0 1 2; do
    url=${MEMBER_URL[m]}
    list+=,${url%@*}@127.0.0.1:${RELAY_PORT[$1,$m]}/${url##*/}
  done
  echo "${list#,}"
}

url_for() {
  case $1 in
    members) echo "${MEMBER_URL[0]}" ;;  # only for labels: the workers get --members
    sqlite) echo "sqlite://$RUN/locks.db" ;;
    # A cluster: both hosts, sqlock follows the one that accepts writes.
    postgresql) if [[ -n $CLUSTER ]]; then echo "$SQLOCK_CLUSTER_PG_MULTI_URL"
                else echo "$SQLOCK_TEST_POSTGRES_URL"; fi ;;
    mysql) echo "$SQLOCK_TEST_MYSQL_URL" ;;
    *) die "unknown backend $1" ;;
  esac
}
server_of() { [[ $1 == postgresql ]] && echo postgres || echo mariadb; }

# ------------------------------------------------------------------------ workers
declare -a PIDS=() SPAWNS=()
declare -A STOP_SEEN=()    # pid -> ms when first seen stopped
declare -A STOP_NOTED=()   # pid -> 1 once its stop was noted as a fault

spawn() {  # spawn SLOT
  local slot=$1 extra=() as=()
  SPAWNS[slot]=$((${SPAWNS[slot]:-0} + 1))
  # The first worker to reach a write window stops there; the others go on and write.
  [[ $CONTROL == ignore-tokens ]] && extra+=(--self-stop-once "$RUN/selfstop.claim")
  # Partition runs: each slot has its own uid, so its traffic can be told apart (setpriv execs).
  ((PART_UIDS)) && as=(setpriv --reuid="$(slot_user "$slot")" --regid="$PART_GID" --clear-groups --)
  [[ $BACKEND == members ]] && extra+=(--members "$(slot_members "$slot")")
  local worker=("$WORKER")
  ((slot < PY_WORKERS)) && worker=("${PY_WORKER[@]}")
  "${as[@]}" "${worker[@]}" run --url "$URL" --name "$NAME" --strategy "$STRATEGY" --ttl-ms "$TTL" \
    --dir "$RUN" --slot "$slot" --hold-min-pct "$HOLD_MIN" --hold-max-pct "$HOLD_MAX" \
    --renew "$RENEW_NOW" --seed $((SEED + slot * 7919 + SPAWNS[slot] * 104729)) \
    --control "$CONTROL" --mode "$WORKER_MODE" --permits "$PERMITS" --writer-share "$WRITER_SHARE" \
    "${extra[@]}" 2>>"$RUN/worker-$slot.err" &
  PIDS[slot]=$!
}

# A holder's "PID TOKEN SESSION", or nothing.
holder_line() { local f; for f in "$RUN"/hold-*; do [[ -s $f ]] && { head -n1 "$f"; return; }; done; return 0; }
slot_of_pid() { local i; for i in "${!PIDS[@]}"; do [[ ${PIDS[i]} == "$1" ]] && { echo "$i"; return; }; done; }
# The holder's pid when there is one (most faults hurt most there), else a random worker.
victim() {
  local line; line=$(holder_line)
  if [[ -n $line && -n $(slot_of_pid "${line%% *}") ]]; then echo "${line%% *}"
  else echo "${PIDS[RANDOM % ${#PIDS[@]}]}"; fi
}

# Watch the workers: respawn the ones that died on their own, note stops (whoever caused
# them), continue a stop once it lasted STOP_MS.
monitor() {
  local i pid st t
  t=$(now_ms)
  for i in "${!PIDS[@]}"; do
    pid=${PIDS[i]}
    st=$(proc_state "$pid")
    if [[ -z $st || $st == Z ]]; then
      wait "$pid" 2>/dev/null || true
      echo "worker $i (pid $pid) exited on its own" >>"$RUN/harness.err"
      spawn "$i"
      continue
    fi
    if [[ $st == T ]]; then
      if [[ -z ${STOP_SEEN[$pid]:-} ]]; then
        STOP_SEEN[$pid]=$t
        [[ -n ${STOP_NOTED[$pid]:-} ]] || { note fault stop "$pid"; ((++FAULTS)); }
        STOP_NOTED[$pid]=1
        note stopped "$pid"   # clock read after we saw it stopped
      elif ((t - STOP_SEEN[$pid] >= STOP_MS)); then
        note cont "$pid"      # clock read before the signal
        kill -CONT "$pid" 2>/dev/null || true
        note fault_end stop "$pid"
        unset "STOP_SEEN[$pid]" "STOP_NOTED[$pid]"
      fi
    fi
  done
}

# A stop asked for by SIGUSR1 that has not happened yet: end its fault now (a later self-stop
# is noted as a new fault by monitor()), so it does not hide every later liveness window.
close_pending_stops() {
  local pid
  for pid in "${!STOP_NOTED[@]}"; do
    [[ -n ${STOP_SEEN[$pid]:-} ]] && continue
    note fault_end stop "$pid"; unset "STOP_NOTED[$pid]"
  done
}

continue_all() {
  local pid
  for pid in "${!STOP_SEEN[@]}"; do
    note cont "$pid"; kill -CONT "$pid" 2>/dev/null || true; note fault_end stop "$pid"
  done
  STOP_SEEN=() STOP_NOTED=()
}

server_pids() {
  local pid
  if [[ $BACKEND == postgresql ]]; then
    pid=$(head -n1 "$DB/pg/postmaster.pid")
    # shellcheck disable=SC2046  # a list of pids
    echo "$pid" $(cat /proc/"$pid"/task/*/children 2>/dev/null || true)
  else
    cat "$DB/mariadb/mysqld.pid"
  fi
}

# ------------------------------------------------------------------------ reapers
# Each reaper loop runs `sqlock reap` back to back, with no grace: a released row goes at once,
# an abandoned lease once the run has seen it unchanged for its TTL (--settle: two TTLs).
# Errors are expected while a fault lasts (a crashed or paused server); their output is kept.
REAPER_PIDS=()
start_reapers() {
  local i
  for ((i = 0; i < REAPERS; i++)); do
    while :; do
      "$CLI" --url "$URL" --connect-timeout 1s reap --settle "$((TTL * 2))ms" --batch 10 \
        >>"$RUN/reaper-$i.log" 2>&1 || sleep 0.1
    done &
    REAPER_PIDS+=($!)
  done
}
stop_reapers() {
  local p
  for p in "${REAPER_PIDS[@]:-}"; do
    [[ -n $p ]] || continue
    kill -STOP "$p" 2>/dev/null || true  # the loop starts no new reap while its child dies
    pkill -KILL -P "$p" 2>/dev/null || true
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  REAPER_PIDS=()
}

# ------------------------------------------------------------------------ nemeses
# Each nemesis_KIND injects one fault and notes "fault KIND TARGET" ... "fault_end KIND TARGET"
# (stops are noted by monitor()). New kinds: add a function and list it in applicable().
applicable() {  # applicable KIND: is it meaningful for this backend?
  case $1 in
    kill|stop) return 0 ;;
    # Separate member servers (--backend members) get the member kinds instead of the
    # one-server kinds.
    crash|migrate) [[ -z $CLUSTER && $BACKEND != members ]] ;;
    # SQLite has no server: its clock is each worker's own, and there is no network.
    session-kill|pause|clock|partition) [[ $BACKEND != sqlite && $BACKEND != members && -z $CLUSTER ]] ;;
    failover) [[ -n $CLUSTER ]] ;;
    member-kill|member-stop|member-clock|member-partition) [[ $BACKEND == members ]] ;;
    *) die "unknown nemesis $1" ;;
  esac
}
ALL_KINDS=(kill stop session-kill crash pause clock partition migrate
  member-kill member-stop member-clock member-partition)

# migrate: one migration at a time, in the background (it may wait for select_for_update
# holders, one second at a time); noted ended when the migrator exits.
MIGRATE_PID=0 MIGRATE_FAILED=0
nemesis_migrate() {
  ((MIGRATE_PID)) && return 0
  note fault migrate schema
  "$MIGRATOR" "$URL" >>"$RUN/migrate.log" 2>&1 &
  MIGRATE_PID=$!
}
end_migrate() {  # end_migrate [force]: note the migrator's end once it exited (force: wait)
  ((MIGRATE_PID)) || return 0
  if [[ ${1:-} != force ]]; then
    local st; st=$(proc_state "$MIGRATE_PID")
    [[ -z $st || $st == Z ]] || return 0
  fi
  local rc=0
  wait "$MIGRATE_PID" || rc=$?
  ((rc == 0)) || MIGRATE_FAILED=1
  note fault_end migrate schema
  MIGRATE_PID=0
}

nemesis_kill() {
  local pid slot; pid=$(victim); slot=$(slot_of_pid "$pid")
  note fault kill "$slot"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  # A stop of this process (asked for, or in progress) ends with it.
  [[ -n ${STOP_NOTED[$pid]:-} ]] && note fault_end stop "$pid"
  unset "STOP_SEEN[$pid]" "STOP_NOTED[$pid]"
  spawn "$slot"
  note fault_end kill "$slot"
}

nemesis_stop() {
  local pid; pid=$(victim)
  # Stopped already, or asked to stop itself and not there yet: a second "fault stop" of the
  # same process would get no fault_end (one stop, one continue), and a fault left open
  # hides every later liveness window from the checker.
  [[ -n ${STOP_SEEN[$pid]:-} || -n ${STOP_NOTED[$pid]:-} ]] && return 0
  note fault stop "$pid"; STOP_NOTED[$pid]=1
  # Half the time the worker stops itself inside its next write window (the worst moment).
  if ((RANDOM % 2)); then kill -USR1 "$pid" 2>/dev/null || true
  else kill -STOP "$pid" 2>/dev/null || true; fi
}

nemesis_session_kill() {
  local line pid sid ports port sql
  port=${URL##*:}; port=${port%%/*}
  line=$(holder_line)
  [[ -n $line ]] || line="$(victim) 0 0"
  read -r pid _ sid <<<"$line"
  note fault session-kill "$pid"
  if [[ $sid == 0 ]]; then
    # Pooled sessions: end every server session of that worker, found by its local ports.
    ports=$(ss -tnpH state established "( dport = :$port )" 2>/dev/null |
            awk -v p="pid=$pid," 'index($0, p) { n = split($3, a, ":"); print a[n] }' | paste -sd, -)
    [[ -n $ports ]] || { note fault_end session-kill "$pid"; return 0; }
    if [[ $BACKEND == postgresql ]]; then
      sql="SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE client_port IN ($ports)"
    else
      sql=$(printf "'127.0.0.1:%s'," ${ports//,/ }); sql="SELECT id FROM information_schema.processlist WHERE host IN (${sql%,})"
    fi
  elif [[ $BACKEND == postgresql ]]; then
    sql="SELECT pg_terminate_backend($sid)"
  fi
  if [[ $BACKEND == postgresql ]]; then
    /usr/lib/postgresql/15/bin/psql -qAtX -h "$DB/pg-sock" -p "$port" -U postgres -d postgres \
      -c "$sql" >/dev/null 2>>"$RUN/harness.err" || true
  else
    local ids=$sid id
    [[ $sid == 0 ]] && ids=$(mariadb --no-defaults --socket="$DB/mariadb/mysqld.sock" -uroot -N -e "$sql" 2>>"$RUN/harness.err" || true)
    for id in $ids; do
      mariadb --no-defaults --socket="$DB/mariadb/mysqld.sock" -uroot -e "KILL $id" 2>>"$RUN/harness.err" || true
    done
  fi
  note fault_end session-kill "$pid"
}

nemesis_crash() {
  local i
  note fault crash "$BACKEND"
  if [[ $BACKEND == sqlite ]]; then
    # No server: everything that holds SQLite state dies at once.
    for i in "${!PIDS[@]}"; do kill -KILL "${PIDS[i]}" 2>/dev/null || true; done
    for i in "${!PIDS[@]}"; do wait "${PIDS[i]}" 2>/dev/null || true; done
    for i in "${!STOP_NOTED[@]}"; do note fault_end stop "$i"; done
    STOP_SEEN=() STOP_NOTED=()
    for i in "${!PIDS[@]}"; do spawn "$i"; done
  else
    "$TESTDB" crash "$DB" "$(server_of "$BACKEND")" >>"$RUN/harness.err" 2>&1
    "$TESTDB" restart "$DB" "$(server_of "$BACKEND")" >>"$RUN/harness.err" 2>&1
  fi
  note fault_end crash "$BACKEND"
}

# failover (--failover): crash the cluster's primary (pg_ctl stop -m immediate) and promote
# its synchronous standby (pg_replica.sh failover, ~0.35 s); the workers follow through the
# multi-host URL. Injected while someone holds when anyone does within 2 s (the case that
# matters: a session lock must die, a lease must survive). A failover that fails fails the run.
nemesis_failover() {
  local give_up=$(($(now_ms) + 2000))
  while [[ -z $(holder_line) ]] && (($(now_ms) < give_up)); do sleep 0.01; done
  local old=node$SQLOCK_CLUSTER_PG_PRIMARY_NODE pid=$SQLOCK_CLUSTER_PG_PRIMARY_PID fo st
  note fault failover "$old"
  "$REPLICA" failover "$CLUSTER" >>"$RUN/failover.log" 2>&1 &
  fo=$!
  # The postmaster exits after its backends: once it is gone (or a zombie) every lock session
  # of the old primary is closed. Noted as "crashed" (resume times count from there).
  while st=$(proc_state "$pid"); [[ -n $st && $st != Z ]] && [[ -n $(proc_state "$fo") ]]; do
    sleep 0.005
  done
  st=$(proc_state "$pid")
  [[ -z $st || $st == Z ]] && note crashed "$old"
  wait "$fo" || FAILOVER_FAILED=1
  # shellcheck disable=SC1091
  source "$CLUSTER/env.sh"
  note fault_end failover "$old"   # the new primary accepts writes
}

PAUSE_UNTIL=0 PAUSED_PIDS=
nemesis_pause() {
  PAUSED_PIDS=$(server_pids)
  note fault pause "$BACKEND"
  # shellcheck disable=SC2086
  kill -STOP $PAUSED_PIDS 2>/dev/null || true
  PAUSE_UNTIL=$(($(now_ms) + TTL * 3 / 2))
}
end_pause() {
  ((PAUSE_UNTIL)) || return 0
  [[ ${1:-} == force ]] || (($(now_ms) >= PAUSE_UNTIL)) || return 0
  # shellcheck disable=SC2086
  kill -CONT $PAUSED_PIDS 2>/dev/null || true
  note fault_end pause "$BACKEND"
  PAUSE_UNTIL=0
}

# clock: steps the servers' wall clock (the offset file, re-read on every call) by
# CLOCK_STEP seconds: 0 -> +S -> 0 -> -S -> 0 ... so forward and backward steps alternate. A
# forward step only makes leases expire sooner (safety is what it tests): its fault ends at
# once. A backward step makes a lease written before it last CLOCK_STEP longer, so an
# abandoned one (holder killed or partitioned) may block that long: the fault stays open for
# CLOCK_STEP + TTL, and no liveness window overlapping it is checked.
CLOCK_OFFSET=0 CLOCK_NEXT_SIGN=1 CLOCK_UNTIL=0 CLOCK_TARGET=
# Atomic replace: the servers re-open their file on every clock call (tools/testdb.sh gives each
# server a file of its own; both are stepped, whichever backend is under test).
set_clock() {
  local server
  for server in postgres mariadb; do
    printf '%+d\n' "$1" >"$CLOCK_FILE.$server.new"
    mv -f "$CLOCK_FILE.$server.new" "$CLOCK_FILE.$server"
  done
  CLOCK_OFFSET=$1
}
nemesis_clock() {
  ((CLOCK_UNTIL)) && return 0           # a backward step is still open
  local to=0 step
  if ((CLOCK_OFFSET == 0)); then to=$((CLOCK_NEXT_SIGN * CLOCK_STEP)); CLOCK_NEXT_SIGN=$((-CLOCK_NEXT_SIGN)); fi
  step=$(printf '%+d' $((to - CLOCK_OFFSET)))
  CLOCK_TARGET=$step
  note fault clock "$step"
  set_clock "$to"
  if [[ $step == -* ]]; then CLOCK_UNTIL=$(($(now_ms) + CLOCK_STEP * 1000 + TTL))
  else note fault_end clock "$step"; fi
}
end_clock() {
  ((CLOCK_UNTIL)) || return 0
  [[ ${1:-} == force ]] || (($(now_ms) >= CLOCK_UNTIL)) || return 0
  note fault_end clock "$CLOCK_TARGET"
  CLOCK_UNTIL=0
}

# partition: every worker slot runs as its own uid (sqlock-torture-K), and all its TCP
# connections to the server port get a conntrack mark (iptables OUTPUT, -m owner); the fault
# drops every packet of the victim's marked connections in INPUT on lo (both directions, no
# FIN/RST: its requests and the server's replies just vanish, and new connections hang in SYN)
# for PARTITION_MS, then deletes the rule. Only this run's server port and uids are affected.
PART_UIDS=0 PART_GID='' PART_UNTIL=0 PART_RULE=() PART_TARGET=
slot_user() { echo "sqlock-torture-$1"; }
mark_of() { echo $(( (SERVER_PORT << 8) | $1 )); }
ensure_slot_users() {  # ensure_slot_users N: users for slots 0..N-1 and their group
  local i u
  command -v iptables >/dev/null || die "partition needs iptables (apt-get install iptables)"
  ((EUID == 0)) || die "partition needs root (iptables, setpriv)"
  (
    flock 9   # parallel run.sh processes create the same users
    getent group sqlock-torture >/dev/null || groupadd --system sqlock-torture
    for ((i = 0; i < $1; i++)); do
      u=$(slot_user "$i")
      id -u "$u" >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin --gid sqlock-torture "$u"
    done
  ) 9>/run/lock/sqlock-torture-users.lock
  PART_GID=$(getent group sqlock-torture | cut -d: -f3)
}
# Workers of different uids share the run directory and its resource files.
share_run_dir() {
  local f
  chmod 1777 "$RUN"
  for f in fence.lock fence.max fence.log counter ticket; do : >>"$RUN/$f"; chmod 666 "$RUN/$f"; done
}
add_rule() { iptables -w "$@" -m comment --comment "$RULE_TAG"; }
mark_slots() {  # mark_slots N
  local i
  for ((i = 0; i < $1; i++)); do
    add_rule -A OUTPUT -o lo -p tcp --dport "$SERVER_PORT" -m owner --uid-owner "$(slot_user "$i")" \
      -j CONNMARK --set-mark "$(mark_of "$i")"
  done
}
remove_rules() {
  local chain line
  command -v iptables >/dev/null || return 0
  for chain in INPUT OUTPUT; do
    # (no rule of ours is not a failure: grep's status must not end the cleanup under pipefail)
    { iptables -w -S "$chain" 2>/dev/null || true; } | { grep -F -- "--comment $RULE_TAG" || true; } |
      while read -r line; do
        # shellcheck disable=SC2086  # a rule spec, split as iptables -S printed it
        iptables -w -D ${line#-A } 2>/dev/null || true
      done
  done
  return 0
}
nemesis_partition() {
  ((PART_UNTIL)) && return 0            # one partition at a time
  local pid slot; pid=$(victim); slot=$(slot_of_pid "$pid")
  [[ -n $slot ]] || return 0
  PART_TARGET=$slot
  note fault partition "$slot"
  PART_RULE=(INPUT -i lo -p tcp -m connmark --mark "$(mark_of "$slot")" -j DROP)
  add_rule -I "${PART_RULE[@]}"
  PART_UNTIL=$(($(now_ms) + ${PARTITION_MS:-$((TTL * 2))}))
}
end_partition() {
  ((PART_UNTIL)) || return 0
  [[ ${1:-} == force ]] || (($(now_ms) >= PART_UNTIL)) || return 0
  iptables -w -D "${PART_RULE[@]}" -m comment --comment "$RULE_TAG" 2>>"$RUN/harness.err" || true
  note fault_end partition "$PART_TARGET"
  PART_UNTIL=0
}

# ------------------------------------------------------------------------ member nemeses
# --backend members: each fault hits ONE member (a random one) or one client's way to one
# member. At most one member fault with a duration (member-stop, member-partition) is open at
# a time, and no member fault is drawn meanwhile, so a majority of members always answers
# (the target: any one of three members down or paused); client faults go on beside them.
MEMBER_UNTIL=0 MEMBER_FAULT='' MEMBER_TARGET='' MEMBER_PAUSED=''
member_busy() { ((MEMBER_UNTIL)); }

# member-kill: kill -9 (MariaDB) / pg_ctl stop -m immediate (PostgreSQL) of one member's
# server, restarted at once on the same data directory and port (and clock file); the fault
# ends when it answers again.
nemesis_member_kill() {
  local m=$((RANDOM % 3))
  note fault member-kill "m$m"
  member_testdb "$m" crash >>"$RUN/harness.err" 2>&1
  member_testdb "$m" restart >>"$RUN/harness.err" 2>&1
  note fault_end member-kill "m$m"
}

# member-stop: SIGSTOP of one member's server (PostgreSQL: postmaster and every backend) for
# 1.5 x TTL, then SIGCONT: its clients' requests go unanswered, connections stay open.
nemesis_member_stop() {
  local m=$((RANDOM % 3))
  MEMBER_PAUSED=$(member_pids "$m")
  note fault member-stop "m$m"
  # shellcheck disable=SC2086  # a list of pids
  kill -STOP $MEMBER_PAUSED 2>/dev/null || true
  MEMBER_FAULT=member-stop MEMBER_TARGET=m$m MEMBER_UNTIL=$(($(now_ms) + TTL * 3 / 2))
}

# member-clock: steps one member's wall clock (its offset file, re-read on every clock call):
# a member at offset 0 goes to +S or -S (the signs alternate), one that is off goes back to 0.
# A quorum decides nothing on a member's clock (takeover needs a row seen unchanged for a TTL
# of the waiter's steady clock; expires_at is for operators), so the fault ends at once, also
# for a backward step: unlike the one-server clock nemesis, the liveness window that follows
# is checked.
MEMBER_CLOCK_SIGN=1
nemesis_member_clock() {
  local m=$((RANDOM % 3)) to=0 step
  if ((MEMBER_OFFSET[m] == 0)); then
    to=$((MEMBER_CLOCK_SIGN * CLOCK_STEP)); MEMBER_CLOCK_SIGN=$((-MEMBER_CLOCK_SIGN))
  fi
  step=$(printf '%+d' $((to - MEMBER_OFFSET[m])))
  note fault member-clock "m$m" "$step"
  set_member_clock "$m" "$to"
  note fault_end member-clock "m$m" "$step"
}

# member-partition: one client (the holder if any) cut off from one member for PARTITION_MS:
# its relay to that member is frozen (nothing passes either way, nothing is closed), then
# thawed.
MEMBER_CUT=''
nemesis_member_partition() {
  local pid slot m=$((RANDOM % 3))
  pid=$(victim); slot=$(slot_of_pid "$pid")
  [[ -n $slot ]] || return 0
  MEMBER_CUT=${RELAY_PID[$slot,$m]}
  note fault member-partition "$slot-m$m"
  kill -USR1 "$MEMBER_CUT" 2>/dev/null || true
  MEMBER_FAULT=member-partition MEMBER_TARGET=$slot-m$m
  MEMBER_UNTIL=$(($(now_ms) + ${PARTITION_MS:-$((TTL * 2))}))
}

end_member_fault() {  # end_member_fault [force]
  ((MEMBER_UNTIL)) || return 0
  [[ ${1:-} == force ]] || (($(now_ms) >= MEMBER_UNTIL)) || return 0
  if [[ $MEMBER_FAULT == member-stop ]]; then
    # shellcheck disable=SC2086  # a list of pids
    kill -CONT $MEMBER_PAUSED 2>/dev/null || true
  else
    kill -USR2 "$MEMBER_CUT" 2>/dev/null || true
  fi
  note fault_end "$MEMBER_FAULT" "$MEMBER_TARGET"
  MEMBER_UNTIL=0
}

# ------------------------------------------------------------------------ one run
teardown() {
  local max_hold=$1
  local deadline=$(($(now_ms) + max_hold + 3000)) i alive
  for i in "${!PIDS[@]}"; do
    [[ -s $RUN/hold-$(printf %02d "$i") ]] || kill -KILL "${PIDS[i]}" 2>/dev/null || true
  done
  while :; do
    alive=0
    for i in "${!PIDS[@]}"; do
      [[ -n $(proc_state "${PIDS[i]}") && $(proc_state "${PIDS[i]}") != Z ]] && alive=1
    done
    ((alive && $(now_ms) < deadline)) || break
    sleep 0.05
  done
  for i in "${!PIDS[@]}"; do kill -KILL "${PIDS[i]}" 2>/dev/null || true; wait "${PIDS[i]}" 2>/dev/null || true; done
  PIDS=()
}
RUN_NO=0
RESULTS=()
mode_label() {
  case $WORKER_MODE in
    leader) echo ' mode=leader' ;;
    semaphore) echo " mode=semaphore permits=$PERMITS" ;;
    rw) echo " mode=rw max_readers=$PERMITS writer_share=$WRITER_SHARE" ;;
    quorum) if [[ $BACKEND == members ]]; then echo " mode=quorum members=${MEMBER_KINDS//,/+}"
            else echo ' mode=quorum members=3'; fi ;;
  esac
}
# run_one BACKEND STRATEGY NEMESES DURATION PROCESSES -> prints the summary line; 0 pass, 1 fail
run_one() {
  BACKEND=$1 STRATEGY=$2
  local nemeses=$3 duration=$4 procs=$5 kinds=() kind n item start end t next max_hold
  local eligible=() fresh=()
  local has_stop=0
  local -A cap=() used=()
  RUN_NO=$((RUN_NO + 1))
  RUN=$WORK/r$RUN_NO-$BACKEND-$STRATEGY
  mkdir -p "$RUN"
  if [[ $BACKEND == members ]]; then ensure_members
  elif [[ $BACKEND != sqlite && -z $CLUSTER ]]; then ensure_servers; fi
  URL=$(url_for "$BACKEND")
  NAME="torture-$RUN_NO-$SEED"
  HOLD_MIN=${HOLD%-*} HOLD_MAX=${HOLD#*-}
  RENEW_NOW=$RENEW
  FAULTS=0
  STOP_MS=$((TTL * STOP_FACTOR / 10))
  [[ $CONTROL == ignore-tokens ]] && STOP_MS=$((TTL * 3))
  PIDS=() SPAWNS=() STOP_SEEN=() STOP_NOTED=()
  SERVER_PORT=${URL##*:}; SERVER_PORT=${SERVER_PORT%%/*}
  [[ $BACKEND == sqlite ]] && SERVER_PORT=0
  CLOCK_UNTIL=0 CLOCK_NEXT_SIGN=1 PART_UNTIL=0 PART_UIDS=0 MIGRATE_PID=0 MIGRATE_FAILED=0
  MEMBER_UNTIL=0
  [[ $BACKEND != sqlite && $BACKEND != members && -n ${TESTDB_FAKETIME_FILE:-} ]] && set_clock 0
  if [[ $BACKEND == members ]]; then for n in 0 1 2; do set_member_clock "$n" 0; done; fi

  IFS=, read -ra items <<<"$nemeses"
  for item in "${items[@]}"; do
    kind=${item%%:*}
    if [[ $kind == mix ]]; then
      for n in "${ALL_KINDS[@]}"; do applicable "$n" && kinds+=("$n"); done
      continue
    fi
    [[ $kind == none ]] && continue
    if ! applicable "$kind"; then
      echo "torture: nemesis $kind does not apply to $BACKEND; skipped$([[ $kind == clock ]] &&
        echo " (SQLite's clock is each worker's own process clock; there is no server clock)")" >&2
      continue
    fi
    kinds+=("$kind")
    [[ $item == *:* ]] && cap[$kind]=${item#*:}
  done

  local had_faults=${#kinds[@]} wanted=("${kinds[@]}")
  # migrate is not drawn: it is injected once, a third into the run (a short run's few draws
  # could miss it), and its migration runs beside the drawn faults.
  local migrate_at=0 k drawn_kinds=()
  for k in "${kinds[@]}"; do
    if [[ $k == migrate ]]; then migrate_at=1; else drawn_kinds+=("$k"); fi
  done
  kinds=("${drawn_kinds[@]}")
  if [[ " ${kinds[*]} " == *" partition "* ]]; then
    ensure_slot_users "$procs"
    PART_UIDS=1
    share_run_dir
    mark_slots "$procs"
  fi
  if [[ " ${kinds[*]} " == *" clock "* && -z ${TESTDB_FAKETIME_FILE:-} ]]; then
    die "clock: the servers were started without a shifted clock (TESTDB_FAKETIME_FILE)"
  fi
  [[ " ${kinds[*]} " == *" stop "* ]] && has_stop=1
  [[ $BACKEND == members ]] || "$CLI" migrate --url "$URL" >/dev/null
  [[ $BACKEND == members ]] && start_relays "$procs"
  note run_start
  for ((n = 0; n < procs; n++)); do spawn "$n"; done
  start_reapers
  start=$(now_ms); end=$((start + duration * 1000))
  ((migrate_at)) && migrate_at=$((start + duration * 1000 / 3))
  next=$((start + INTERVAL / 2 + RANDOM % INTERVAL))
  # A run whose faults came slowly (a loaded machine: a server or member restart takes
  # seconds) goes on past its end, by its length or 30 s if longer, until every kind was
  # injected, drawing the missing ones without the interval between faults: a kind that never
  # came would fail the run's floor without proving anything wrong.
  local overtime=$((duration * 1000 > 30000 ? duration * 1000 : 30000))
  while t=$(now_ms); ((t < end)) || { ((t < end + overtime)) && kinds_unused; }; do
    monitor 2>>"$RUN/harness.err"
    end_pause; end_clock; end_partition; end_migrate; end_member_fault
    if ((migrate_at && t >= migrate_at)); then
      used[migrate]=1; migrate_at=0
      nemesis_migrate 2>>"$RUN/harness.err"
    fi
    # While a member fault is open, only the other kinds are drawn (one member at a time).
    eligible=()
    for k in "${kinds[@]}"; do [[ $k == member-* ]] && member_busy || eligible+=("$k"); done
    # Past the end only a kind not injected yet is drawn, and at once.
    if ((t >= end)); then
      fresh=(); for k in "${eligible[@]}"; do ((${used[$k]:-0})) || fresh+=("$k"); done
      eligible=("${fresh[@]}"); next=$t
    fi
    if ((${#eligible[@]} && t >= next && !PAUSE_UNTIL)); then
      draw_kind "${eligible[@]}"; kind=${eligible[DRAWN]}
      used[$kind]=$((${used[$kind]:-0} + 1))
      "nemesis_${kind//-/_}" 2>>"$RUN/harness.err"
      # A kind that reached its cap is not drawn again.
      if [[ -n ${cap[$kind]:-} ]] && ((used[$kind] >= cap[$kind])); then
        for n in "${!kinds[@]}"; do [[ ${kinds[n]} == "$kind" ]] && unset "kinds[n]"; done
        kinds=("${kinds[@]}")
      fi
      next=$(($(now_ms) + INTERVAL / 2 + RANDOM % INTERVAL))
    fi
    sleep 0.05
  done
  if [[ $CONTROL == ignore-tokens ]]; then
    # Deterministic: wait (bounded) until the self-stopped worker has resumed, i.e. made its
    # stale write.
    local give_up=$(($(now_ms) + 30000))
    while ! grep -q " resumed " "$RUN"/h-*.log && (($(now_ms) < give_up)); do
      monitor 2>>"$RUN/harness.err"; sleep 0.05
    done
  fi
  # Quiet tail: stopped processes are continued, then grants must resume (liveness) before
  # the run ends.
  max_hold=$((TTL * HOLD_MAX / 100))
  local tail_ms=0
  # Long enough for a last stop to be continued and a whole liveness window to follow.
  ((had_faults)) && tail_ms=$((has_stop * STOP_MS + TTL + max_hold + BOUND + 1000))
  # The control only needs its last self-stopped worker continued (and its stale write done).
  [[ $CONTROL == ignore-tokens ]] && tail_ms=$((STOP_MS + 500))
  close_pending_stops
  # Faults with a duration (pause, partition, a backward clock step) end first, so the tail's
  # liveness window is whole.
  while ((PAUSE_UNTIL || CLOCK_UNTIL || PART_UNTIL || MIGRATE_PID || MEMBER_UNTIL)); do
    monitor 2>>"$RUN/harness.err"; end_pause; end_clock; end_partition; end_migrate
    end_member_fault; sleep 0.05
  done
  local quiet_end=$(($(now_ms) + tail_ms))
  while (($(now_ms) < quiet_end)); do monitor; end_pause; end_clock; end_partition; end_member_fault; sleep 0.05; done
  end_pause force; end_clock force; end_partition force; end_member_fault force
  note run_end
  stop_reapers
  : >"$RUN/stop"
  continue_all
  # Waiters would only finish after yet another hold each: kill them; let holders finish.
  # (stderr: bash reports every killed job.)
  teardown "$max_hold" 2>>"$RUN/harness.err"
  ((PART_UIDS)) && remove_rules
  [[ $BACKEND != sqlite && $BACKEND != members && -n ${TESTDB_FAKETIME_FILE:-} ]] && set_clock 0
  if [[ $BACKEND == members ]]; then
    for n in 0 1 2; do set_member_clock "$n" 0; done
    stop_relays
  fi

  local mode=fault fields rc=0 verdict secs check_opts=()
  ((had_faults)) || [[ $CONTROL == ignore-tokens ]] || mode=none
  local promote=- promote_total=0 ms
  if [[ -n $CLUSTER ]]; then
    # How long each failover took from the crash to a writable new primary: the cluster's
    # time, not the library's (~0.3 s; once 5.3 s, a promote request that waited out the
    # standby's WAL retry sleep).
    if [[ -f $RUN/failover.log ]]; then
      promote=$(sed -n 's/.*crash to writable primary \([0-9]*\) ms.*/\1/p' "$RUN/failover.log" | paste -sd, -)
      for ms in ${promote//,/ }; do ((ms > promote_total)) && promote_total=$ms; done
    fi
    # The bound on kill -> next grant: the failover's own time, plus a lease held at the crash
    # (its release may be lost with the old primary: the waiters then wait out its TTL), plus
    # the longest hold, plus 1 s for reconnecting (and a promotion's usual ~0.3 s).
    check_opts+=(--resume-bound "${RESUME_BOUND:-$((promote_total + TTL + max_hold + 1000))}")
    [[ $STRATEGY == select_for_update ]] && check_opts+=(--lock-dies-with-server)
  fi
  [[ $WORKER_MODE == leader ]] && check_opts+=(--leader)
  [[ $WORKER_MODE == semaphore ]] && check_opts+=(--semaphore "$PERMITS")
  [[ $WORKER_MODE == rw ]] && check_opts+=(--rw)
  fields=$("$CHECK" "$RUN" "$TTL" "$max_hold" "$BOUND" "$mode" "${check_opts[@]}") || rc=$?
  ((rc <= 1)) || { fields="checker-error"; rc=1; }
  if [[ -n $CLUSTER ]]; then
    # No failover, or one that failed, is a failed run: never a pass without the fault.
    ((FAILOVER_FAILED)) && { fields+=" failover=FAILED"; rc=1; }
    [[ ${used[failover]:-0} -ge 1 ]] || { fields+=" failover=NOT-INJECTED"; rc=1; }
    fields+=" promote_ms=${promote:--}"
  fi
  ((MIGRATE_FAILED)) && { fields+=" migrate=FAILED"; rc=1; }
  [[ $CONTROL != none ]] || check_floors "${wanted[@]}"
  secs=$(( ($(now_ms) - start) / 1000 ))
  if [[ $CONTROL != none ]]; then
    # A control must be caught by the rule it exercises.
    local want='(overlap|counter)'; [[ $CONTROL == ignore-tokens ]] && want='fence'
    [[ $CONTROL == quorum-minority ]] && want='(overlap|counter|token-dup|token-order)'
    if ((rc)) && [[ $fields =~ violations=[0-9]+\([^\)]*$want ]]; then verdict=CAUGHT; rc=0
    else verdict=MISSED; rc=1; fi
  else
    ((rc)) && verdict=FAIL || verdict=PASS
  fi
  local line="torture ${RUN_LABEL}backend=$BACKEND$([[ -n $CLUSTER ]] && echo -failover) strategy=$STRATEGY$(mode_label)$( ((REAPERS)) && echo " reapers=$REAPERS")$( ((PY_WORKERS)) && echo " python_workers=$PY_WORKERS") nemesis=$nemeses control=$CONTROL processes=$procs seconds=$secs ttl_ms=$TTL hold=$HOLD seed=$SEED $fields verdict=$verdict report=$RUN/report.txt"
  echo "$line"
  RESULTS+=("$line")
  ((rc == 0)) || KEEP=1
  return "$rc"
}

# draw_kind KIND...: DRAWN = the index of the next fault's kind: one not injected yet in this
# run while there is one (so a short run injects every kind it was asked for), else any. Reads
# run_one's used[]; no subshell, so the run's RANDOM sequence (its --seed) decides.
DRAWN=0
draw_kind() {
  local i fresh=()
  for ((i = 1; i <= $#; i++)); do ((${used[${!i}]:-0})) || fresh+=($((i - 1))); done
  if ((${#fresh[@]})); then DRAWN=${fresh[RANDOM % ${#fresh[@]}]}; else DRAWN=$((RANDOM % $#)); fi
}

# kinds_unused: true while a kind still drawable in this run (run_one's kinds[]) has not been
# injected yet (used[]).
kinds_unused() {
  local k
  for k in "${kinds[@]}"; do ((${used[$k]:-0})) || return 0; done
  return 1
}

# check_floors KIND...: a run that saw fewer grants than MIN_GRANTS, or in which a requested
# fault kind was never injected (per the checker's faults=), proved less than it claims: it
# fails, and says why in its summary line. Reads and extends run_one's fields and rc.
check_floors() {
  local grants faults kind
  grants=$(field grants "$fields") faults=$(field faults "$fields")
  if [[ ! $grants =~ ^[0-9]+$ ]] || ((grants < MIN_GRANTS)); then
    fields+=" floor=grants<$MIN_GRANTS"; rc=1
  fi
  for kind in "$@"; do
    [[ ,$faults, == *",$kind:"* ]] || { fields+=" floor=no-$kind"; rc=1; }
  done
}

# run_matrix NEMESES DURATION PROCESSES: every selected backend x strategy
run_matrix() {
  local b s status=0
  IFS=, read -ra bs <<<"$BACKENDS"
  IFS=, read -ra ss <<<"$STRATEGIES"
  for b in "${bs[@]}"; do for s in "${ss[@]}"; do
    # Separate member servers are quorum mode's (--smoke and --long run them on their own).
    [[ $b == members && ($WORKER_MODE != quorum || $MODE =~ ^(smoke|long)$) ]] && continue
    run_one "$b" "$s" "$1" "$2" "$3" || status=1
  done; done
  return "$status"
}

run_controls() {  # run_controls [BACKEND]: the quorum control also on BACKEND (members)
  local status=0 saved_hold=$HOLD saved_ttl=$TTL saved_mode=$WORKER_MODE
  TTL=1000
  CONTROL=skip-lock HOLD=5-50; run_one sqlite unique_key none 6 3 || status=1
  CONTROL=ignore-tokens HOLD=1-10; run_one sqlite unique_key none 8 3 || status=1
  # A grant on one member of three, with that member's token: must be caught.
  WORKER_MODE=quorum CONTROL=quorum-minority HOLD=5-50
  run_one "${1:-sqlite}" unique_key none 6 3 || status=1
  CONTROL=none HOLD=$saved_hold TTL=$saved_ttl WORKER_MODE=$saved_mode
  return "$status"
}

# The quorum over three separate member servers (--backend members), every member nemesis and
# the client ones (stop pauses the holder). run_members_quorum NEMESES DURATION PROCESSES
run_members_quorum() {
  local saved_mode=$WORKER_MODE status=0
  WORKER_MODE=quorum
  run_one members unique_key "$@" || status=1
  WORKER_MODE=$saved_mode
  return "$status"
}
MEMBER_NEMESES=kill,stop,member-kill,member-stop,member-clock,member-partition

field() { [[ " $2 " =~ \ $1=([^ ]*)\  ]] && echo "${BASH_REMATCH[1]}"; return 0; }
# The summary lines of this process's runs as a markdown table (for the README).
markdown_table() {
  local line
  echo
  echo "| backend | strategy | nemeses | seconds | grants | faults injected | violations | losses | verdict |"
  echo "| --- | --- | --- | ---: | ---: | --- | --- | ---: | --- |"
  for line in "${RESULTS[@]}"; do
    [[ $(field control "$line") == none ]] || continue
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(field backend "$line")" \
      "$(field strategy "$line")" "$(field nemesis "$line")" "$(field seconds "$line")" \
      "$(field grants "$line")" "$(field faults "$line" | sed 's/,/, /g')" \
      "$(field violations "$line" | sed 's/,/, /g')" "$(field losses "$line")" "$(field verdict "$line")"
  done
  echo
  echo "| negative control | backend | violations | verdict |"
  echo "| --- | --- | --- | --- |"
  for line in "${RESULTS[@]}"; do
    [[ $(field control "$line") != none ]] || continue
    printf '| %s | %s | %s | %s |\n' "$(field control "$line")" "$(field backend "$line")" \
      "$(field violations "$line" | sed 's/,/, /g')" "$(field verdict "$line")"
  done
}

status=0
case $MODE in
  single)
    if [[ $NEMESES == none ]]; then : "${PROCESSES:=6}"; else : "${PROCESSES:=4}"; fi
    run_matrix "$NEMESES" "$DURATION" "$PROCESSES" || status=1 ;;
  controls)
    run_controls || status=1 ;;
  smoke)
    # Every backend (or those of --backend: tools/test-all.sh runs one process per backend,
    # side by side). Floors (--min-grants per matrix, about half the fewest grants seen in
    # the smoke runs of session 13; and every requested fault kind injected) keep a run from
    # passing on less than it must show; the controls run with SQLite.
    t0=$SECONDS
    ((BACKENDS_SET)) || BACKENDS=sqlite,postgresql,mysql,members
    STRATEGIES=unique_key,select_for_update,optimistic_version
    saved_ttl=$TTL saved_hold=$HOLD saved_interval=$INTERVAL
    TTL=1000 HOLD=1-50
    # A compatible migration applied mid-run, while workers hold and wait (issue 34). Two of
    # the four workers are Python programs (py_worker.py, issue 36): one history, same rules.
    need_python
    MIN_GRANTS=20 PY_WORKERS=2; run_matrix kill,crash:1,migrate:1 8 4 || status=1
    PY_WORKERS=0
    # leader_election electors (built on unique_key), with kills and stops.
    saved_strategies=$STRATEGIES STRATEGIES=unique_key WORKER_MODE=leader
    MIN_GRANTS=20; run_matrix kill,stop:2 8 4 || status=1
    # semaphore (2 permits) and shared_mutex (2 reader permits, a third of grants exclusive).
    # The semaphore runs with two reapers beside the workers (permit rows are reaped often).
    WORKER_MODE=semaphore REAPERS=2 MIN_GRANTS=40; run_matrix kill,stop:2 10 4 || status=1
    REAPERS=0
    WORKER_MODE=rw MIN_GRANTS=25; run_matrix kill,stop:2 10 4 || status=1
    # quorum_mutex over three members (lock tables of their own on the server), with kills
    # and stopped holders: fencing and the counter as in lock mode (issue 38).
    WORKER_MODE=quorum MIN_GRANTS=15; run_matrix kill,stop:2 10 4 || status=1
    STRATEGIES=$saved_strategies WORKER_MODE=lock
    TTL=1500 HOLD=1-80
    MIN_GRANTS=10 PY_WORKERS=2; run_matrix none 14 6 || status=1
    PY_WORKERS=0
    MIN_GRANTS=0 TTL=$saved_ttl HOLD=$saved_hold
    if [[ ,$BACKENDS, == *,sqlite,* ]]; then run_controls || status=1; fi
    if [[ ,$BACKENDS, == *,members,* ]]; then
      # quorum_mutex over three separate servers: every member nemesis once and the client
      # ones (each kind at least once: the floors), then its control on those servers.
      TTL=1000 HOLD=1-50 INTERVAL=1000
      MIN_GRANTS=15; run_members_quorum "$MEMBER_NEMESES" 12 4 || status=1
      MIN_GRANTS=0 TTL=1000 WORKER_MODE=quorum CONTROL=quorum-minority HOLD=5-50
      run_one members unique_key none 6 3 || status=1
      CONTROL=none WORKER_MODE=lock TTL=$saved_ttl HOLD=$saved_hold INTERVAL=$saved_interval
    fi
    echo "torture smoke ($BACKENDS): $((SECONDS - t0)) s, status $status" ;;
  failover)
    # Each run: a fresh primary + sync standby; per strategy one torture run with one failover,
    # then the old primary rejoins as the sync standby for the next strategy.
    t0=$SECONDS
    ((STRATEGIES_SET)) || STRATEGIES=unique_key,select_for_update,optimistic_version
    ((DURATION_SET)) || DURATION=5
    ((TTL_SET)) || TTL=1000
    ((HOLD_SET)) || HOLD=1-50
    INTERVAL=2000  # the failover comes 1-3 s into the run (plus up to 2 s waiting for a holder)
    IFS=, read -ra ss <<<"$STRATEGIES"
    for ((r = 1; r <= RUNS; r++)); do
      CLUSTER=$WORK/cluster$r
      # A cluster that cannot start fails the run (never a skip).
      if ! "$REPLICA" start "$CLUSTER" >"$WORK/cluster$r-start.log" 2>&1; then
        echo "torture run=$r/$RUNS backend=postgresql-failover verdict=FAIL cluster did not start: $(tail -n 3 "$WORK/cluster$r-start.log" | tr '\n' ' ')"
        CLUSTER_STARTED=1; "$REPLICA" stop "$CLUSTER" >/dev/null 2>&1 || true; CLUSTER_STARTED=0
        status=1 KEEP=1; continue
      fi
      CLUSTER_STARTED=1
      # shellcheck disable=SC1091
      source "$CLUSTER/env.sh"
      first=1
      for s in "${ss[@]}"; do
        if ((!first)) && ! "$REPLICA" rejoin "$CLUSTER" >>"$WORK/cluster$r-rejoin.log" 2>&1; then
          echo "torture run=$r/$RUNS backend=postgresql-failover strategy=$s verdict=FAIL the old primary did not rejoin as a sync standby (log: $WORK/cluster$r-rejoin.log)"
          status=1 KEEP=1; break
        fi
        first=0
        # shellcheck disable=SC1091
        source "$CLUSTER/env.sh"
        FAILOVER_FAILED=0 RUN_LABEL="run=$r/$RUNS "
        run_one postgresql "$s" failover:1 "$DURATION" "${PROCESSES:-4}" || status=1
      done
      "$REPLICA" stop "$CLUSTER" >/dev/null 2>&1 || true
      CLUSTER_STARTED=0
    done
    # Resume times (kill -> next grant) over all runs, per strategy.
    for s in "${ss[@]}"; do
      vals=$(for line in "${RESULTS[@]}"; do
               [[ $(field strategy "$line") == "$s" ]] && field resume_ms "$line" | tr ',' '\n'
             done | grep -E '^[0-9]+$' | sort -n || true)
      n=$(grep -c . <<<"$vals" || true)
      if ((n)); then
        echo "torture failover strategy=$s failovers=$n resume_ms_median=$(sed -n "$(((n + 1) / 2))p" <<<"$vals") resume_ms_max=$(tail -n1 <<<"$vals")"
      else
        echo "torture failover strategy=$s failovers=0"
      fi
    done
    echo "torture failover: $RUNS runs, $((SECONDS - t0)) s, status $status" ;;
  long)
    # One backend at a time with --backend; several run.sh --long processes may run in
    # parallel (each has its own servers, ports, run directories and iptables rules).
    t0=$SECONDS
    ((BACKENDS_SET)) || BACKENDS=sqlite,postgresql,mysql,members
    ((STRATEGIES_SET)) || STRATEGIES=unique_key,select_for_update,optimistic_version
    ((DURATION_SET)) || DURATION=600
    run_matrix mix "$DURATION" "${PROCESSES:-5}" || status=1
    # The quorum over three separate servers: client kills and stops, and every member
    # nemesis (one member at a time), for the whole duration; its control on those servers.
    members=
    if [[ ,$BACKENDS, == *,members,* ]]; then
      run_members_quorum mix "$DURATION" "${PROCESSES:-5}" || status=1
      members=members
    fi
    run_controls $members || status=1
    markdown_table
    echo "torture long: $((SECONDS - t0)) s, status $status" ;;
esac
exit "$status"
