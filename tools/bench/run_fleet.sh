#!/usr/bin/env bash
# Fleets of `sqlock run` processes started at once against servers at their Debian default
# connection limits (PostgreSQL max_connections 100, MariaDB 151: tools/testdb.sh with
# TESTDB_DEFAULT_LIMITS=1) and a SQLite file under /tmp (issue 18, "fleet scale").
#
#   tools/bench/run_fleet.sh     builds the release preset's CLI if needed; 10-20 minutes
#
# For each backend, strategy, mode (one name / P distinct names) and process count P, P
# processes wait at one start barrier, then each runs
#   sqlock --url URL run NAME --ttl 30s --wait $FLEET_WAIT -- tools/bench/fleet_job.sh
# (the job holds an O_EXCL marker for the name for 20 ms and logs its grant and token), while a
# persistent admin connection samples the server's client connections every 50 ms.
# Environment (defaults): FLEET_BACKENDS ("sqlite postgresql mysql"), FLEET_MODES ("one
# distinct"), FLEET_SIZES ("1 10 100 300 1000"), FLEET_DISTINCT_SIZES (FLEET_SIZES),
# FLEET_STRATEGIES ("unique_key"), FLEET_WAIT (10m), FLEET_TIMEOUT (seconds per run, 720),
# FLEET_JOB_SECONDS (0.02), FLEET_NAME (fleet: the output directory's name), FLEET_SQLOCK_ARGS
# (global sqlock options for every process, e.g. "--connect-timeout 60s"; none by default).
# Writes build/release/bench/$FLEET_NAME/results.md and results.json (and runs/*/ per run).
# Exit status: 0, or 1 when any process failed or any overlap / token order violation was seen.
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export TESTDB_DEFAULT_LIMITS=1
bench_enter "$ROOT/tools/bench/run_fleet.sh" sqlock_cli fleet-testdb "$@"

# ---------------------------------------------------------------- inside testdb.sh run
read -r -a backends <<<"${FLEET_BACKENDS:-sqlite postgresql mysql}"
read -r -a modes <<<"${FLEET_MODES:-one distinct}"
read -r -a sizes <<<"${FLEET_SIZES:-1 10 100 300 1000}"
read -r -a distinct_sizes <<<"${FLEET_DISTINCT_SIZES:-${sizes[*]}}"
read -r -a strategies <<<"${FLEET_STRATEGIES:-unique_key}"
WAIT=${FLEET_WAIT:-10m}
TIMEOUT=${FLEET_TIMEOUT:-720}

FLEET_OUT=$OUT/${FLEET_NAME:-fleet}
STAGE=$FLEET_OUT/bin # a private copy: someone else may rebuild build/release meanwhile
rm -rf "$FLEET_OUT"
mkdir -p "$STAGE" "$FLEET_OUT/runs"
cp -a "$BUILD/sqlock" "$BUILD"/libsqlock.so* "$BUILD/sqlock0" "$ROOT/tools/bench/fleet.py" \
  "$ROOT/tools/bench/fleet_job.sh" "$STAGE/"
export LD_LIBRARY_PATH="$STAGE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
SQLOCK=$STAGE/sqlock

# Each process of a fleet is one sqlock process plus its job (bash, sleep, rm); the largest
# fleet needs that many processes and a few descriptors each.
max=0
for p in "${sizes[@]}" "${distinct_sizes[@]}"; do ((p > max)) && max=$p; done
need_procs=$((4 * max + 200))
if [[ $(ulimit -u) != unlimited ]] && (($(ulimit -u) < need_procs)); then
  ulimit -u "$need_procs" || { echo "run_fleet: ulimit -u is below $need_procs" >&2; exit 1; }
fi
if (($(ulimit -n) < 4 * max + 256)); then
  ulimit -n $((4 * max + 256)) || { echo "run_fleet: ulimit -n is below $((4 * max + 256))" >&2; exit 1; }
fi

SQLITE_DIR=$(mktemp -d /tmp/sqlock-fleet-XXXXXX)
trap 'rm -rf "$SQLITE_DIR"' EXIT
SQLITE_URL="sqlite://$SQLITE_DIR/fleet.db"

# Admin clients (superuser over the servers' unix sockets, as testdb.sh reaches them).
pg_port=${SQLOCK_TEST_POSTGRES_URL##*:}
pg_port=${pg_port%%/*}
pg_admin=(psql -X -q -At -h "$SQLOCK_TEST_DB_DIR/pg-sock" -p "$pg_port" -U postgres -d postgres)
my_admin=(mariadb --no-defaults -uroot "--socket=$SQLOCK_TEST_DB_DIR/mariadb/mysqld.sock" -N -B -n)
pg_max=$("${pg_admin[@]}" -c 'SHOW max_connections')
pg_reserved=$("${pg_admin[@]}" -c 'SHOW superuser_reserved_connections')
my_max=$("${my_admin[@]}" -e 'SELECT @@max_connections')

url_of() {
  case $1 in
    sqlite) echo "$SQLITE_URL" ;;
    postgresql) echo "$SQLOCK_TEST_POSTGRES_URL" ;;
    mysql) echo "$SQLOCK_TEST_MYSQL_URL" ;;
  esac
}

cat >"$FLEET_OUT/meta.json" <<EOF
{"date": "$(date -u '+%Y-%m-%d %H:%M UTC')", "commit": "$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src include sql || echo "+dirty")",
 "vcpus": $(nproc), "load_before": "$(cut -d' ' -f1-3 /proc/loadavg)",
 "postgresql_max_connections": $pg_max, "postgresql_superuser_reserved": $pg_reserved,
 "mysql_max_connections": $my_max, "wait": "$WAIT", "timeout_seconds": $TIMEOUT,
 "job_seconds": ${FLEET_JOB_SECONDS:-0.02}}
EOF
echo "fleet: PostgreSQL max_connections $pg_max (reserved $pg_reserved), MariaDB $my_max" >&2

failed=0
t_all=$SECONDS
for backend in "${backends[@]}"; do
  url=$(url_of "$backend")
  "$SQLOCK" --url "$url" migrate >/dev/null
  sampler=()
  case $backend in
    postgresql) sampler=(--sampler postgresql --admin "${pg_admin[@]}") ;;
    mysql) sampler=(--sampler mysql --admin "${my_admin[@]}") ;;
  esac
  for strategy in "${strategies[@]}"; do
    for mode in "${modes[@]}"; do
      list=("${sizes[@]}")
      [[ $mode == distinct ]] && list=("${distinct_sizes[@]}")
      for p in "${list[@]}"; do
        dir=$FLEET_OUT/runs/$backend-$strategy-$mode-$p
        t_run=$SECONDS
        python3 "$STAGE/fleet.py" run --sqlock "$SQLOCK" --url "$url" --backend "$backend" \
          --mode "$mode" --processes "$p" --strategy "$strategy" --wait "$WAIT" \
          --sqlock-args="${FLEET_SQLOCK_ARGS:-}" \
          --timeout "$TIMEOUT" --job "$STAGE/fleet_job.sh" --dir "$dir" \
          --results "$FLEET_OUT/runs.jsonl" "${sampler[@]}" || failed=1
        echo "  ($((SECONDS - t_run)) s including setup)" >&2
        find "$dir/stderr" -empty -delete 2>/dev/null || true # keep only the messages of processes that said something
        sleep 2 # let the servers close the last sessions before the next count
      done
    done
  done
done
echo "fleet: all runs took $((SECONDS - t_all)) s" >&2

python3 "$STAGE/fleet.py" report --results "$FLEET_OUT/runs.jsonl" --meta "$FLEET_OUT/meta.json" \
  --markdown "$FLEET_OUT/results.md" --json "$FLEET_OUT/results.json" || failed=1
echo "Markdown: ${FLEET_OUT#"$ROOT"/}/results.md, JSON: ${FLEET_OUT#"$ROOT"/}/results.json"
((failed == 0)) || { echo "run_fleet: failures or violations (see the table)" >&2; exit 1; }
