#!/usr/bin/env bash
# The measurement of issue 17 (README "Scheduled jobs on a fleet"): 5 hosts whose cron fires
# within 2 s of each other, a job of 0.3 s. How many times does it run with a plain
# `sqlock run --ttl 10m --wait 1m`, with `--wait 0`, and with `--once-per 1d`; and with
# `--once-per` when the first runner exits 1 (attempts / successes in the ledger)?
#
#   tools/jobs-acceptance.sh [--repeat N] [--build DIR]
#
# Backends: SQLite always; PostgreSQL and MariaDB when SQLOCK_TEST_POSTGRES_URL /
# SQLOCK_TEST_MYSQL_URL are set (tools/testdb.sh start DIR; source DIR/env.sh).
# Exits 1 when a --once-per measurement is not exactly one run (two attempts, one success).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPEAT=3 BUILD=$ROOT/build/ci
while (($#)); do
  case $1 in
    --repeat) REPEAT=$2; shift ;;
    --build) BUILD=$2; shift ;;
    *) echo "usage: $0 [--repeat N] [--build DIR]" >&2; exit 2 ;;
  esac
  shift
done
CLI=$BUILD/sqlock
WORK=$(mktemp -d /tmp/jobs-acceptance-XXXX)
trap 'rm -rf "$WORK"' EXIT

# fleet NAME SCRIPT ARGS...: 5 hosts, the first at once, the last 2 s later, the others at
# random offsets in between; prints the number of runs (lines in $WORK/NAME.log).
fleet() {
  local name=$1 script=$2 pids=() h offsets=(0 2000)
  shift 2
  for h in 1 2 3; do offsets+=($((RANDOM % 2001))); done
  : >"$WORK/$name.log"
  for h in "${offsets[@]}"; do
    (sleep "$(printf '%d.%03d' $((h / 1000)) $((h % 1000)))"
     "$CLI" run "$name" "$@" -- /bin/sh -c "$script" >/dev/null 2>&1 || true) &
    pids+=($!)
  done
  wait "${pids[@]}"
  wc -l <"$WORK/$name.log"
}

urls=("sqlite://$WORK/acceptance.db")
[[ -n ${SQLOCK_TEST_POSTGRES_URL:-} ]] && urls+=("$SQLOCK_TEST_POSTGRES_URL")
[[ -n ${SQLOCK_TEST_MYSQL_URL:-} ]] && urls+=("$SQLOCK_TEST_MYSQL_URL")
bad=0
for url in "${urls[@]}"; do
  export SQLOCK_URL=$url
  "$CLI" migrate >/dev/null
  backend=${url%%:*}
  for ((r = 1; r <= REPEAT; r++)); do
    id=$$-$r-$RANDOM
    plain=$(fleet "plain-$id" "echo x >> '$WORK/plain-$id.log'; sleep 0.3" --ttl 10m --wait 1m)
    nowait=$(fleet "nowait-$id" "echo x >> '$WORK/nowait-$id.log'; sleep 0.3" --ttl 10m --wait 0)
    once=$(fleet "once-$id" "echo x >> '$WORK/once-$id.log'; sleep 0.3" --once-per 1d)
    fleet "fail-$id" "echo x >> '$WORK/fail-$id.log'; sleep 0.3
      mkdir '$WORK/fail-$id.first' 2>/dev/null && exit 1; exit 0" --once-per 1d >/dev/null
    attempts=$("$CLI" history "fail-$id" --json | grep -c '"outcome"' || true)
    successes=$("$CLI" history "fail-$id" --json | grep -c '"outcome": "succeeded"' || true)
    echo "$backend run=$r plain(--wait 1m)=$plain plain(--wait 0)=$nowait once-per=$once" \
         "once-per(first exits 1): attempts=$attempts successes=$successes"
    [[ $once == 1 && $attempts == 2 && $successes == 1 ]] || bad=1
  done
done
exit "$bad"
