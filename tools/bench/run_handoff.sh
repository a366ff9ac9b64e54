#!/usr/bin/env bash
# Lock handoff under contention: sqlock's strategies next to the servers' own locks, all in one
# run on throwaway PostgreSQL 15 + MariaDB 10.11 servers (tools/testdb.sh), so they share the
# machine's noise. Prints a markdown table and writes build/release/bench/handoff.json.
#
#   tools/bench/run_handoff.sh          about 4 minutes; builds the release preset if needed
#
# Environment: BENCH_PROCESSES (default 4), BENCH_SECONDS (10), BENCH_HOLD_US (0).
# Exit status: 0, or 1 when a run failed or reported a mutual exclusion / token order violation
# (the table is printed either way). See tools/bench/README.md for how to read the numbers.
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
BENCH="$BUILD/tools/bench/sqlock_handoff_bench"
PROCESSES=${BENCH_PROCESSES:-4}
SECONDS_EACH=${BENCH_SECONDS:-10}
HOLD_US=${BENCH_HOLD_US:-0}
bench_enter "$ROOT/tools/bench/run_handoff.sh" sqlock_handoff_bench bench-testdb "$@"

# ---------------------------------------------------------------- inside testdb.sh run
rm -f "$OUT"/handoff-*.json "$OUT/handoff.json"
SQLITE_DIR=$(mktemp -d /tmp/sqlock-bench-XXXXXX)
trap 'rm -rf "$SQLITE_DIR"' EXIT
SQLITE_URL="sqlite://$SQLITE_DIR/handoff.db"

# database label, mode, URL — in this order, one after the other.
runs=(
  "PostgreSQL" pg_advisory        "$SQLOCK_TEST_POSTGRES_URL"
  "PostgreSQL" unique_key         "$SQLOCK_TEST_POSTGRES_URL"
  "PostgreSQL" select_for_update  "$SQLOCK_TEST_POSTGRES_URL"
  "PostgreSQL" optimistic_version "$SQLOCK_TEST_POSTGRES_URL"
  "PostgreSQL" semaphore          "$SQLOCK_TEST_POSTGRES_URL"
  "PostgreSQL" shared_mutex       "$SQLOCK_TEST_POSTGRES_URL"
  "PostgreSQL" leader             "$SQLOCK_TEST_POSTGRES_URL"
  "MariaDB"    mysql_get_lock     "$SQLOCK_TEST_MYSQL_URL"
  "MariaDB"    unique_key         "$SQLOCK_TEST_MYSQL_URL"
  "MariaDB"    select_for_update  "$SQLOCK_TEST_MYSQL_URL"
  "MariaDB"    optimistic_version "$SQLOCK_TEST_MYSQL_URL"
  "MariaDB"    semaphore          "$SQLOCK_TEST_MYSQL_URL"
  "MariaDB"    shared_mutex       "$SQLOCK_TEST_MYSQL_URL"
  "MariaDB"    leader             "$SQLOCK_TEST_MYSQL_URL"
  "SQLite"     unique_key         "$SQLITE_URL"
  "SQLite"     select_for_update  "$SQLITE_URL"
  "SQLite"     optimistic_version "$SQLITE_URL"
  "SQLite"     semaphore          "$SQLITE_URL"
  "SQLite"     shared_mutex       "$SQLITE_URL"
  "SQLite"     leader             "$SQLITE_URL"
)

failed=0
files=() labels=() status=()
for ((i = 0; i < ${#runs[@]}; i += 3)); do
  label=${runs[i]} mode=${runs[i + 1]} url=${runs[i + 2]}
  json="$OUT/handoff-$((i / 3))-${label,,}-$mode.json"
  echo "### $label $mode" >&2
  rc=0
  "$BENCH" --url "$url" --mode "$mode" --processes "$PROCESSES" --seconds "$SECONDS_EACH" \
    --hold-us "$HOLD_US" --json "$json" >&2 || rc=$?
  ((rc == 0)) || failed=1
  labels+=("$label") files+=("$json") status+=("$rc")
done

# Our own one-line JSON, fixed format: a number (or null / "string") after "key": .
field() { sed -n "s/.*\"$2\": \"\{0,1\}\([^,}\"]*\).*/\1/p" "$1"; }
array() { sed -n "s/.*\"$2\": \[\([^]]*\)\].*/\1/p" "$1" | sed 's/, / /g'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "null" || b == "null" || b == 0) print "–"; else printf "%.2f×", a / b }'; }
dash() { [[ -n $1 && $1 != null ]] && echo "$1" || echo "–"; }

baseline_pg="" baseline_my=""
for ((k = 0; k < ${#files[@]}; ++k)); do
  [[ -s ${files[k]} ]] || continue
  case "$(field "${files[k]}" mode)" in
    pg_advisory) baseline_pg=$(field "${files[k]}" handoff_median_us) ;;
    mysql_get_lock) baseline_my=$(field "${files[k]}" handoff_median_us) ;;
  esac
done

echo
echo "Lock handoff, $PROCESSES processes × ${SECONDS_EACH} s each, hold ${HOLD_US} µs, $(nproc) vCPUs," \
     "one run ($(date -u '+%Y-%m-%d %H:%M UTC')). Ratios are to the same server's own lock" \
     "(pg_advisory_lock, GET_LOCK) from this run; compare ratios, not absolute times."
echo
echo "| database | mode | grants/s | handoffs | handoff median µs | × server lock | handoff p99 µs | same-process re-grants | grants per process | fairness | longest wait ms | violations |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"
for ((k = 0; k < ${#files[@]}; ++k)); do
  f=${files[k]} label=${labels[k]} mode=${runs[k * 3 + 1]}
  if [[ ! -s $f ]]; then
    echo "| $label | $mode | FAILED (exit ${status[k]}, see above) | | | | | | | | | |"
    continue
  fi
  med=$(field "$f" handoff_median_us)
  case $label in
    PostgreSQL) base=$baseline_pg ;;
    MariaDB) base=$baseline_my ;;
    *) base="" ;;
  esac
  if [[ $mode == pg_advisory || $mode == mysql_get_lock ]]; then x="1 (baseline)"; else x=$(ratio "$med" "$base"); fi
  same=$(field "$f" same_process_regrants)
  frac=$(awk -v f="$(field "$f" same_process_regrant_fraction)" 'BEGIN { printf "%.0f%%", 100 * f }')
  fair=$(field "$f" fairness_ratio)
  if [[ $fair == null ]]; then fair="∞ (starved)"; else fair=$(awk -v v="$fair" 'BEGIN { printf "%.2f", v }'); fi
  wait_ms=$(awk -v v="$(field "$f" max_wait_ms)" 'BEGIN { printf "%.1f", v }')
  me=$(field "$f" mutual_exclusion_violations) tok=$(field "$f" token_order_violations)
  viol="$me overlaps"
  [[ $mode == pg_advisory || $mode == mysql_get_lock ]] || viol+=", $tok token order"
  echo "| $label | $mode | $(field "$f" grants_per_second) | $(field "$f" handoffs) | $(dash "$med") | $x" \
       "| $(dash "$(field "$f" handoff_p99_us)") | $same ($frac) | $(array "$f" per_process_grants)" \
       "| $fair | $wait_ms | $viol |"
done

{
  echo "["
  sep=""
  for f in "${files[@]}"; do
    [[ -s $f ]] || continue
    printf '%s' "$sep"; tr -d '\n' <"$f"; sep=$',\n'
  done
  echo
  echo "]"
} >"$OUT/handoff.json"
rm -f "$OUT"/handoff-*.json
echo
echo "JSON: ${OUT#"$ROOT"/}/handoff.json"
((failed == 0)) || { echo "run_handoff: some runs failed or found violations (see above)" >&2; exit 1; }
