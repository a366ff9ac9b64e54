#!/usr/bin/env bash
# Torture, jobs mode: scheduled jobs (sqlock run --once-per) under random skew and kill -9.
#
#   tools/torture/jobs.sh [--backend sqlite|postgresql|mysql|all] [--duration SECS] [--hosts N]
#                         [--period MS] [--skew PCT] [--kill PCT] [--fail PCT] [--ttl MS]
#                         [--seed N] [--build DIR] [--keep] [--control short-period]
#
# Every period (a nominal slot k), each of N hosts fires the job once, at a random offset in
# [0, skew% of the period] after the slot's nominal time (skew < 50). The job's command writes
# "k token" to runs.log, then works for 5-25 % of the period. A firing that runs the command is
# kill -9'ed (the CLI and its command: no outcome recorded) with probability kill%, at a random
# moment of its work; the command itself fails (exit 1) with probability fail%. Checks, from the ledger (sqlock history) joined
# with runs.log by fencing token:
#   - no nominal slot has two successful runs, and no sqlock slot key has two;
#   - every nominal slot in which some firing ended normally (exit 0: ran or skipped) has
#     exactly one successful run (a firing skips only when its own slot is done);
#   - the attempts of one nominal slot all carry one sqlock slot key (takeovers stay in it);
#   - every attempt ended up recorded (no "running" row once all firings are over).
# --control short-period (negative control): sqlock is told a period of a quarter of the real one,
# so the skew exceeds half of it; the checker must report two successes in some slot (the run
# then exits 0 when the control was CAUGHT).
# Prints one summary line per backend; exits 1 if any check failed, 2 on bad usage.
# PostgreSQL/MariaDB: the servers named by SQLOCK_TEST_POSTGRES_URL / SQLOCK_TEST_MYSQL_URL when
# set, else throwaway ones from tools/testdb.sh. Each run uses its own table prefix.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TESTDB=$ROOT/tools/testdb.sh

BACKENDS=sqlite DURATION=60 HOSTS=5 PERIOD=4000 SKEW=40 KILL=30 FAIL=10 TTL=1000
SEED=$((RANDOM * 32768 + RANDOM)) BUILD=$ROOT/build/ci KEEP=0 CONTROL=none

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "torture-jobs: $*" >&2; exit 2; }

while (($#)); do
  case $1 in
    --backend) BACKENDS=$2; shift ;;
    --duration) DURATION=$2; shift ;;
    --hosts) HOSTS=$2; shift ;;
    --period) PERIOD=$2; shift ;;
    --skew) SKEW=$2; shift ;;
    --kill) KILL=$2; shift ;;
    --fail) FAIL=$2; shift ;;
    --ttl) TTL=$2; shift ;;
    --seed) SEED=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --keep) KEEP=1 ;;
    --control) CONTROL=$2; shift ;;
    -h|--help) usage ;;
    *) die "unknown option $1" ;;
  esac
  shift
done
[[ $BACKENDS == all ]] && BACKENDS=sqlite,postgresql,mysql
((SKEW >= 0 && SKEW < 50)) || die "--skew must be below 50 (% of the period)"
((PERIOD >= 1000)) || die "--period must be at least 1000 ms"
CLI=$BUILD/sqlock
[[ -x $CLI ]] || die "no $CLI: build first (cmake --build --preset ci)"
case $CONTROL in none|short-period) ;; *) die "unknown control $CONTROL" ;; esac
SQLOCK_PERIOD=$PERIOD
[[ $CONTROL == short-period ]] && SQLOCK_PERIOD=$((PERIOD / 4))
RANDOM=$SEED

ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
now_ms() { date +%s%3N; }

DB='' DB_STARTED=0
cleanup() { if ((DB_STARTED)); then "$TESTDB" stop "$DB" >/dev/null 2>&1 || true; fi; }
trap cleanup EXIT

url_for() {
  local backend=$1 run=$2
  case $backend in
    sqlite) echo "sqlite://$run/jobs.db" ;;
    postgresql|mysql)
      local var=SQLOCK_TEST_POSTGRES_URL
      [[ $backend == mysql ]] && var=SQLOCK_TEST_MYSQL_URL
      if [[ -z ${!var:-} ]]; then
        if ((!DB_STARTED)); then
          DB=$(mktemp -d /tmp/tortjobs-db-XXXX) && chmod 755 "$DB"
          "$TESTDB" start "$DB" >/dev/null
          DB_STARTED=1
        fi
        # shellcheck disable=SC1091
        source "$DB/env.sh"
      fi
      echo "${!var}" ;;
    *) die "unknown backend $backend" ;;
  esac
}

# One firing of nominal slot $1 by host $2 at nominal time $3 (ms, epoch).
fire() {
  local k=$1 h=$2 t=$3 offset kill_after='' work fail=0 pid status killed=0
  # A subshell repeats its parent's RANDOM sequence: seed each firing on its own (reproducible).
  RANDOM=$((SEED + k * 1009 + h * 7919))
  offset=$((RANDOM % (PERIOD * SKEW / 100 + 1)))
  work=$((PERIOD * (5 + RANDOM % 21) / 100))
  ((RANDOM % 100 < KILL)) && kill_after=$((RANDOM % (work + 1)))
  ((RANDOM % 100 < FAIL)) && fail=1
  local wait_ms=$((t + offset - $(now_ms)))
  ((wait_ms > 0)) && sleep "$(ms "$wait_ms")"
  setsid "$CLI" --table-prefix "$PREFIX" run "$JOB" --once-per "${SQLOCK_PERIOD}ms" --ttl "${TTL}ms" \
    -- /bin/sh -c "echo \"$k \$SQLOCK_TOKEN\" >> '$RUN/runs.log'; touch '$RUN/started-$k-$h'
                   sleep $(ms "$work"); exit $fail" \
    >>"$RUN/cli.out" 2>>"$RUN/cli.err" &
  pid=$!
  if [[ -n $kill_after ]]; then
    # Kill runners (not skipped firings): once this firing's command started, at a random
    # moment of its work.
    while kill -0 "$pid" 2>/dev/null && [[ ! -e $RUN/started-$k-$h ]]; do sleep 0.02; done
    if [[ -e $RUN/started-$k-$h ]]; then
      sleep "$(ms "$kill_after")"
      kill -9 -- "-$pid" 2>/dev/null && killed=1
    fi
  fi
  status=0
  { wait "$pid"; } 2>/dev/null || status=$?
  echo "$k $h $status $killed" >>"$RUN/fires.log"
}

check() {
  # Ledger rows: SLOT OUTCOME HOST:PID TOKEN STARTED DURATION EXIT...
  "$CLI" --table-prefix "$PREFIX" history "$JOB" --limit 1000000 >"$RUN/history.txt"
  awk -v report="$RUN/report.txt" '
    FILENAME ~ /runs.log$/ { slot_of[$2] = $1; next }
    FILENAME ~ /fires.log$/ {
      fired[$1] = 1
      if ($3 == 0) normal[$1]++
      if ($3 == 75) timeouts++
      if ($4 == 1) kills++
      next
    }
    FNR == 1 || /^skipped firings/ { next }
    {
      key = $1; outcome = $2; token = $4; attempts++
      count[outcome]++
      if (outcome == "running") { print "still running: token " token >> report; bad++ }
      if (!(token in slot_of)) next          # killed before its command started
      k = slot_of[token]
      if (k in key_of && key_of[k] != key) {
        print "nominal slot " k " split over keys " key_of[k] " and " key >> report; bad++
      }
      key_of[k] = key
      if (outcome == "succeeded") {
        if (++ok[k] == 2) { print "nominal slot " k ": two successes" >> report; bad++ }
        if (++ok_key[key] == 2) { print "slot key " key ": two successes" >> report; bad++ }
      }
    }
    END {
      for (k in fired) {
        slots++
        if (normal[k] > 0 && ok[k] != 1) {
          print "nominal slot " k ": " normal[k] " firings ended normally but " ok[k] + 0 \
                " successes" >> report
          bad++
        }
        if (ok[k] == 1) done++
      }
      printf "slots=%d done=%d attempts=%d succeeded=%d failed=%d lost=%d abandoned=%d " \
             "kills=%d timeouts=%d violations=%d\n", slots, done, attempts, count["succeeded"],
             count["failed"], count["lost"], count["abandoned"], kills, timeouts, bad + 0
    }' "$RUN/runs.log" "$RUN/fires.log" "$RUN/history.txt"
}

failed=0
IFS=, read -r -a backend_list <<<"$BACKENDS"
for BACKEND in "${backend_list[@]}"; do
  RUN=$(mktemp -d /tmp/tortjobs-XXXX)
  : >"$RUN/runs.log" >"$RUN/fires.log" >"$RUN/report.txt"
  PREFIX=tj$(date +%s%N | tail -c 7)_ JOB=job-$SEED
  export SQLOCK_URL
  SQLOCK_URL=$(url_for "$BACKEND" "$RUN")
  "$CLI" --table-prefix "$PREFIX" migrate >/dev/null
  slots=$((DURATION * 1000 / PERIOD))
  t0=$(($(now_ms) + 500))
  for ((k = 0; k < slots; k++)); do
    t=$((t0 + k * PERIOD))
    for ((h = 0; h < HOSTS; h++)); do
      fire "$k" "$h" "$t" &
    done
    # Start the next slot's firings shortly before its time (they sleep to their offsets).
    wait_ms=$((t + PERIOD - 200 - $(now_ms)))
    ((wait_ms > 0)) && sleep "$(ms "$wait_ms")"
  done
  wait
  summary=$(check)
  verdict=PASS
  [[ $summary == *" violations=0" ]] || verdict=FAIL
  if [[ $CONTROL != none ]]; then
    verdict=CAUGHT
    [[ $summary == *" violations=0" ]] && verdict=MISSED
  fi
  echo "torture-jobs backend=$BACKEND control=$CONTROL seed=$SEED hosts=$HOSTS period_ms=$PERIOD skew=$SKEW% kill=$KILL% fail=$FAIL% ttl_ms=$TTL $summary verdict=$verdict report=$RUN/report.txt"
  if [[ $verdict == FAIL || $verdict == MISSED ]]; then
    failed=1
  elif ((!KEEP)); then
    rm -rf "$RUN"
  fi
done
exit "$failed"
