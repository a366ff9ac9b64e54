#!/usr/bin/env bash
# Reaping expired leases while a live acquirer keeps working, on throwaway PostgreSQL 15 +
# MariaDB 10.11 servers (tools/testdb.sh) and a temp SQLite file, one after the other in one
# session. Prints a markdown table and writes build/release/bench/reap.json.
#
#   tools/bench/run_reap.sh          about 1–2 minutes; builds the release preset if needed
#
# Environment: REAP_ROWS (default 100000), REAP_BATCH (1000), REAP_BASELINE (1, seconds of
# acquiring before the reap starts).
# Exit status: 0, or 1 when a run failed or a verdict (p99 < 50 ms; every expired row reaped and
# no live lease reaped) is FAIL (the table is printed either way). See tools/bench/README.md.
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
BENCH="$BUILD/tools/bench/sqlock_reap_bench"
ROWS=${REAP_ROWS:-100000}
BATCH=${REAP_BATCH:-1000}
BASELINE=${REAP_BASELINE:-1}
bench_enter "$ROOT/tools/bench/run_reap.sh" sqlock_reap_bench reap-testdb "$@"

# ---------------------------------------------------------------- inside testdb.sh run
rm -f "$OUT"/reap-*.json "$OUT/reap.json"
SQLITE_DIR=$(mktemp -d /tmp/sqlock-reap-XXXXXX)
trap 'rm -rf "$SQLITE_DIR"' EXIT

# database label, URL — in this order, one after the other.
runs=(
  "PostgreSQL" "$SQLOCK_TEST_POSTGRES_URL"
  "MariaDB"    "$SQLOCK_TEST_MYSQL_URL"
  "SQLite"     "sqlite://$SQLITE_DIR/reap.db"
)

failed=0
files=() labels=() status=()
for ((i = 0; i < ${#runs[@]}; i += 2)); do
  label=${runs[i]} url=${runs[i + 1]}
  json="$OUT/reap-$((i / 2))-${label,,}.json"
  echo "### $label" >&2
  rc=0
  "$BENCH" --url "$url" --rows "$ROWS" --batch "$BATCH" --baseline "$BASELINE" \
    --json "$json" >&2 || rc=$?
  ((rc == 0)) || failed=1
  labels+=("$label") files+=("$json") status+=("$rc")
done

# Our own one-line JSON, fixed format: a number (or null / true / "string") after "key": .
field() { sed -n "s/.*\"$2\": \"\{0,1\}\([^,}\"]*\).*/\1/p" "$1"; }
num() { awk -v v="$1" -v d="$2" 'BEGIN { if (v == "" || v == "null") print "–"; else printf "%.*f", d, v }'; }

echo
echo "Reaping $ROWS expired leases in batches of $BATCH while one thread acquires and releases" \
     "live leases, $(nproc) vCPUs, one run ($(date -u '+%Y-%m-%d %H:%M UTC'))." \
     "Latency = that thread's lock() calls overlapping the reap; \"before\" = the ${BASELINE} s before it."
echo
echo "| backend | rows | batches | reap s | rows/s | acquires during reap | median ms | p99 ms | max ms | ≥ 50 ms | p99 before reap ms | verdict |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for ((k = 0; k < ${#files[@]}; ++k)); do
  f=${files[k]} label=${labels[k]}
  if [[ ! -s $f ]]; then
    echo "| $label | $ROWS | FAILED (exit ${status[k]}, see above) | | | | | | | | | FAIL |"
    continue
  fi
  verdict=$(field "$f" verdict)
  if [[ $verdict != PASS ]]; then
    why=()
    [[ $(field "$f" latency_pass) == true ]] || why+=("p99 ≥ 50 ms")
    [[ $(field "$f" correctness_pass) == true ]] || why+=("reap check")
    verdict="FAIL (${why[*]})"
  fi
  echo "| $label | $(field "$f" reaped) | $(field "$f" batches) | $(num "$(field "$f" reap_seconds)" 2)" \
       "| $(field "$f" rows_per_second) | $(field "$f" acquisitions_during_reap)" \
       "| $(num "$(field "$f" acquire_median_ms)" 2) | $(num "$(field "$f" acquire_p99_ms)" 2)" \
       "| $(num "$(field "$f" acquire_max_ms)" 2) | $(field "$f" acquisitions_over_limit)" \
       "| $(num "$(field "$f" baseline_p99_ms)" 2) | $verdict |"
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
} >"$OUT/reap.json"
rm -f "$OUT"/reap-*.json
echo
echo "JSON: ${OUT#"$ROOT"/}/reap.json"
((failed == 0)) || { echo "run_reap: some runs failed or a verdict is FAIL (see above)" >&2; exit 1; }
