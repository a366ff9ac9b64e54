#!/usr/bin/env bash
# Every sqlock benchmark in one run, on throwaway PostgreSQL 15 + MariaDB 10.11 servers
# (tools/testdb.sh) and temporary SQLite files, so all of them share the machine's noise:
#
#   1. uncontended acquire + release latency: sqlock vs the same statements through the bare
#      driver, vs pg_advisory_lock / GET_LOCK / flock(2) / a naive INSERT + DELETE
#   2. throughput on distinct names with 1, 2, 4, 8 threads (one shared sqlock::database)
#   3. the CLI: `sqlock run NAME -- true` vs `flock FILE true`, and where its time goes
#   4. lock handoff under contention with 2, 4 and 8 processes (sqlock_handoff_bench)
#
#   tools/bench/run_all.sh        about 6-7 minutes; builds the release preset if needed
#
# Writes build/release/bench/results.md (markdown tables), results.json (everything) and
# handoff.png (handoff latency and grants/s against the number of processes, gnuplot).
# Environment (defaults in brackets): BENCH_LATENCY_ROUNDS [60], BENCH_LATENCY_BATCH [40],
# BENCH_TP_SECONDS [1.0], BENCH_TP_REPS [2], BENCH_CLI_RUNS [50],
# BENCH_HANDOFF_PROCESSES ["2 4 8"], BENCH_HANDOFF_SECONDS [8].
# Exit status: 0, or 1 when a part failed or the handoff benchmark found a violation (the
# results are written either way). See tools/bench/README.md for how to read them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SELF="$ROOT/tools/bench/run_all.sh"
BUILD="$ROOT/build/release"
OUT="$BUILD/bench"
STAGE="$OUT/bin" # a private copy of the binaries: others may rebuild build/release meanwhile
BENCHES=(sqlock_handoff_bench sqlock_latency_bench sqlock_throughput_bench sqlock_cli_bench)

if [[ ${1:-} != --inner ]]; then
  cd "$ROOT"
  if ! command -v gnuplot >/dev/null 2>&1; then
    if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
      echo "run_all: installing gnuplot-nox (for handoff.png)" >&2
      apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox >&2 ||
        echo "run_all: could not install gnuplot; the plot will be skipped" >&2
    else
      echo "run_all: gnuplot is missing; the plot will be skipped" >&2
    fi
  fi
  cmake --preset release -DSQLOCK_BUILD_BENCH=ON >/dev/null
  targets=(sqlock sqlock_cli "${BENCHES[@]}")
  # The install below takes the manual page too when this build makes one (scdoc was found).
  if grep -q '^SQLOCK_BUILD_MANPAGE:BOOL=ON$' "$BUILD/CMakeCache.txt"; then targets+=(sqlock_manpage); fi
  # Others may be editing the library: a failed build is retried a few times.
  built=0
  for attempt in 1 2 3 4 5; do
    if cmake --build --preset release --target "${targets[@]}" -- --no-print-directory >"$BUILD/bench-build.log" 2>&1; then
      built=1
      break
    fi
    echo "run_all: build failed (attempt $attempt, see $BUILD/bench-build.log); retrying in 30 s" >&2
    sleep 30
  done
  ((built)) || { tail -n 30 "$BUILD/bench-build.log" >&2; exit 1; }
  rm -rf "$STAGE"
  mkdir -p "$STAGE"
  cp -a "$BUILD/sqlock" "$BUILD"/libsqlock.so* "$BUILD/sqlock0" "$STAGE/"
  for b in "${BENCHES[@]}"; do cp -a "$BUILD/tools/bench/$b" "$STAGE/"; done
  # The CLI as a user has it: installed (relative RUNPATH), run without LD_LIBRARY_PATH.
  cmake --install "$BUILD" --prefix "$STAGE/installed" >"$BUILD/bench-install.log"
  exec "$ROOT/tools/testdb.sh" run "$BUILD/bench-all-testdb" -- "$SELF" --inner
fi

# ---------------------------------------------------------------- inside testdb.sh run
: "${SQLOCK_TEST_POSTGRES_URL:?run me without --inner}" "${SQLOCK_TEST_MYSQL_URL:?}"
PG=$SQLOCK_TEST_POSTGRES_URL
MY=$SQLOCK_TEST_MYSQL_URL
export LD_LIBRARY_PATH="$STAGE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
LATENCY_ROUNDS=${BENCH_LATENCY_ROUNDS:-60}
LATENCY_BATCH=${BENCH_LATENCY_BATCH:-40}
TP_SECONDS=${BENCH_TP_SECONDS:-1.0}
TP_REPS=${BENCH_TP_REPS:-2}
CLI_RUNS=${BENCH_CLI_RUNS:-50}
read -r -a HANDOFF_PROCESSES <<<"${BENCH_HANDOFF_PROCESSES:-2 4 8}"
HANDOFF_SECONDS=${BENCH_HANDOFF_SECONDS:-8}

PARTS="$OUT/parts"
rm -rf "$PARTS"
mkdir -p "$PARTS"
rm -f "$OUT/results.md" "$OUT/results.json" "$OUT/handoff.png"
SQLITE_DIR=$(mktemp -d /tmp/sqlock-bench-all-XXXXXX)
trap 'rm -rf "$SQLITE_DIR"' EXIT

failed=0
t_all=$SECONDS
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
durations=()
part() { # part NAME CMD...: runs one part, records its duration and whether it failed
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "### $name" >&2
  "$@" >&2 || rc=$?
  ((rc == 0)) || { failed=1; echo "run_all: $name failed (exit $rc)" >&2; }
  durations+=("$name $((SECONDS - t0)) s")
}

# Latency twice: unpinned, then with the client and both servers pinned to the last vCPU
# (round trips on one vCPU: what is left is CPU work, not where the scheduler put things).
pin_args=()
if (($(nproc) > 1)) && [[ -n ${SQLOCK_TEST_POSTGRES_PID:-} && -n ${SQLOCK_TEST_MYSQL_PID:-} ]]; then
  pin_args=(--pin-cpu "$(($(nproc) - 1))" --server-pid "$SQLOCK_TEST_POSTGRES_PID"
            --server-pid "$SQLOCK_TEST_MYSQL_PID")
fi
part latency "$STAGE/sqlock_latency_bench" --url "$PG" --url "$MY" --url "sqlite://$SQLITE_DIR/latency.db" \
  --rounds "$LATENCY_ROUNDS" --batch "$LATENCY_BATCH" "${pin_args[@]}" \
  --json "$PARTS/latency.json" --markdown "$PARTS/latency.md" --summary "$PARTS/targets.md"
part throughput "$STAGE/sqlock_throughput_bench" --url "$PG" --url "$MY" \
  --url "sqlite://$SQLITE_DIR/throughput.db" --seconds "$TP_SECONDS" --reps "$TP_REPS" \
  --json "$PARTS/throughput.json" --markdown "$PARTS/throughput.md"
part cli "$STAGE/sqlock_cli_bench" --sqlock "$STAGE/installed/bin/sqlock" --url "sqlite://$SQLITE_DIR/cli.db" \
  --url "$PG" --url "$MY" --runs "$CLI_RUNS" --flock-file "$SQLITE_DIR/cli.flock" \
  --json "$PARTS/cli.json" --markdown "$PARTS/cli.md"

# Handoff: for each process count, every mode one after the other (server lock first).
modes=(
  "PostgreSQL" pg_advisory       "$PG"
  "PostgreSQL" unique_key        "$PG"
  "PostgreSQL" select_for_update "$PG"
  "MariaDB"    mysql_get_lock    "$MY"
  "MariaDB"    unique_key        "$MY"
  "MariaDB"    select_for_update "$MY"
  "SQLite"     unique_key        "sqlite://$SQLITE_DIR/handoff.db"
  "SQLite"     select_for_update "sqlite://$SQLITE_DIR/handoff.db"
)
handoff_files=() handoff_labels=() handoff_modes=() handoff_procs=() handoff_status=()
t0=$SECONDS
for p in "${HANDOFF_PROCESSES[@]}"; do
  for ((i = 0; i < ${#modes[@]}; i += 3)); do
    label=${modes[i]} mode=${modes[i + 1]} url=${modes[i + 2]}
    json="$PARTS/handoff-$p-$((i / 3))-${label,,}-$mode.json"
    echo "### handoff $p processes: $label $mode" >&2
    rc=0
    "$STAGE/sqlock_handoff_bench" --url "$url" --mode "$mode" --processes "$p" \
      --seconds "$HANDOFF_SECONDS" --json "$json" >&2 || rc=$?
    ((rc == 0)) || failed=1
    handoff_files+=("$json") handoff_labels+=("$label") handoff_modes+=("$mode")
    handoff_procs+=("$p") handoff_status+=("$rc")
  done
done
durations+=("handoff $((SECONDS - t0)) s")

# ---------------------------------------------------------------- handoff table, data, plot
# Our own one-line JSON, fixed format: a number (or null / "string") after "key": .
field() { sed -n "s/.*\"$2\": \"\{0,1\}\([^,}\"]*\).*/\1/p" "$1"; }
array() { sed -n "s/.*\"$2\": \[\([^]]*\)\].*/\1/p" "$1" | sed 's/, / /g'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "null" || b == "null" || b == 0) print "–"; else printf "%.2f×", a / b }'; }
dash() { [[ -n $1 && $1 != null ]] && echo "$1" || echo "–"; }
is_server_lock() { [[ $1 == pg_advisory || $1 == mysql_get_lock ]]; }

handoff_md="$PARTS/handoff.md"
{
  echo "### Lock handoff under contention: ${HANDOFF_PROCESSES[*]} processes"
  echo
  echo "N processes take turns on one lock for ${HANDOFF_SECONDS} s each (hold 0 µs;" \
       "\`sqlock_handoff_bench\`, see its section below). × server lock = median handoff over" \
       "the same server's own lock (pg_advisory_lock, GET_LOCK) at the same N, from this run."
  echo
  echo "| N | database | mode | grants/s | handoffs | handoff median µs | × server lock | handoff p99 µs | same-process re-grants | fairness | longest wait ms | violations |"
  echo "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  for ((k = 0; k < ${#handoff_files[@]}; ++k)); do
    f=${handoff_files[k]} label=${handoff_labels[k]} mode=${handoff_modes[k]} p=${handoff_procs[k]}
    if [[ ! -s $f ]]; then
      echo "| $p | $label | $mode | FAILED (exit ${handoff_status[k]}) | | | | | | | | |"
      continue
    fi
    base=""
    for ((j = 0; j < ${#handoff_files[@]}; ++j)); do
      if [[ ${handoff_procs[j]} == "$p" && ${handoff_labels[j]} == "$label" && -s ${handoff_files[j]} ]] &&
        is_server_lock "${handoff_modes[j]}"; then
        base=$(field "${handoff_files[j]}" handoff_median_us)
      fi
    done
    med=$(field "$f" handoff_median_us)
    if is_server_lock "$mode"; then x="1 (baseline)"; elif [[ $label == SQLite ]]; then x="–"; else x=$(ratio "$med" "$base"); fi
    frac=$(awk -v f="$(field "$f" same_process_regrant_fraction)" 'BEGIN { printf "%.0f%%", 100 * f }')
    fair=$(field "$f" fairness_ratio)
    if [[ $fair == null ]]; then fair="∞ (starved)"; else fair=$(awk -v v="$fair" 'BEGIN { printf "%.2f", v }'); fi
    wait_ms=$(awk -v v="$(field "$f" max_wait_ms)" 'BEGIN { printf "%.1f", v }')
    viol="$(field "$f" mutual_exclusion_violations) overlaps"
    is_server_lock "$mode" || viol+=", $(field "$f" token_order_violations) token order"
    echo "| $p | $label | $mode | $(field "$f" grants_per_second) | $(field "$f" handoffs) | $(dash "$med")" \
         "| $x | $(dash "$(field "$f" handoff_p99_us)") | $(field "$f" same_process_regrants) ($frac)" \
         "| $fair | $wait_ms | $viol |"
  done
  echo
  echo "Grants per process: see \`per_process_grants\` in results.json."
} >"$handoff_md"

# gnuplot data: one block per database + mode, rows "N median p99 grants/s handoffs"
# ("?" = none).
dat="$PARTS/handoff.dat"
: >"$dat"
series=0 names=""
for ((i = 0; i < ${#modes[@]}; i += 3)); do
  label=${modes[i]} mode=${modes[i + 1]}
  printf '"%s %s"\n' "$label" "$mode" >>"$dat"
  names+="${names:+ }\"$label $mode\""
  for ((k = 0; k < ${#handoff_files[@]}; ++k)); do
    [[ ${handoff_labels[k]} == "$label" && ${handoff_modes[k]} == "$mode" ]] || continue
    f=${handoff_files[k]}
    if [[ -s $f ]]; then
      med=$(field "$f" handoff_median_us) p99=$(field "$f" handoff_p99_us) gps=$(field "$f" grants_per_second)
      [[ $med == null ]] && med="?"
      [[ $p99 == null ]] && p99="?"
      echo "${handoff_procs[k]} $med $p99 $gps $(field "$f" handoffs)" >>"$dat"
    else
      echo "${handoff_procs[k]} ? ? ? 0" >>"$dat"
    fi
  done
  printf '\n\n' >>"$dat"
  series=$((series + 1))
done
if command -v gnuplot >/dev/null 2>&1; then
  gnuplot -e "datafile='$dat'; outfile='$OUT/handoff.png'; series=$series; names='$names'" \
    "$ROOT/tools/bench/plot.gp" || { echo "run_all: gnuplot failed" >&2; failed=1; }
fi

# ---------------------------------------------------------------- results.md, results.json
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || commit+=" + uncommitted changes"
pg_version=$(/usr/lib/postgresql/15/bin/postgres --version 2>/dev/null || echo "?")
my_version=$(/usr/sbin/mariadbd --version 2>/dev/null | sed 's/ *for .*//' || echo "?")
sqlite_version=$(awk '/^#define SQLITE_VERSION /{gsub(/"/, "", $3); print $3}' /usr/include/sqlite3.h 2>/dev/null || echo "?")
run_date=$(date -u '+%Y-%m-%d %H:%M UTC')
durations+=("total $((SECONDS - t_all)) s")
durations_text=$(printf '%s, ' "${durations[@]}")
durations_text=${durations_text%, }
include() { if [[ -s $1 ]]; then cat "$1"; else echo "*(this part failed: see the log above)*"; fi; }
{
  echo "# sqlock benchmarks: results"
  echo
  echo "\`tools/bench/run_all.sh\`, $run_date, commit $commit; $(nproc) vCPUs, $(uname -r);" \
       "$pg_version, $my_version, SQLite $sqlite_version (throwaway servers from tools/testdb.sh," \
       "durable commits on). Load average $load_before before, $load_after after." \
       "Durations: $durations_text."
  echo
  echo "**Read the ratios, not the absolute times.** This is a 2-vCPU guest: a loopback round" \
       "trip costs ~17 µs when client and server share a vCPU and ~65 µs when they do not, a" \
       "durable commit ~120 µs of fdatasync (more when other work on the machine writes too)," \
       "and whatever else runs on the machine shares both. Every comparison below was measured" \
       "interleaved in this one run, so it saw the same noise. See tools/bench/README.md."
  echo
  echo "## Targets"
  echo
  include "$PARTS/targets.md"
  echo
  echo "## 1. Uncontended latency"
  echo
  include "$PARTS/latency.md"
  echo
  echo "## 2. Throughput"
  echo
  include "$PARTS/throughput.md"
  echo
  echo "## 3. The CLI"
  echo
  include "$PARTS/cli.md"
  echo
  echo "## 4. Handoff under contention"
  echo
  include "$handoff_md"
  echo
  [[ -s $OUT/handoff.png ]] && echo "![handoff latency and grants/s against the number of processes](handoff.png)"
} >"$OUT/results.md"

json_or_null() { if [[ -s $1 ]]; then cat "$1"; else echo null; fi; }
{
  echo "{\"meta\": {\"date\": \"$run_date\", \"commit\": \"$commit\", \"vcpus\": $(nproc)," \
       "\"kernel\": \"$(uname -r)\", \"postgresql\": \"$pg_version\", \"mariadb\": \"$my_version\"," \
       "\"sqlite\": \"$sqlite_version\", \"load_before\": \"$load_before\", \"load_after\": \"$load_after\"," \
       "\"latency_rounds\": $LATENCY_ROUNDS, \"latency_batch\": $LATENCY_BATCH," \
       "\"throughput_seconds\": $TP_SECONDS, \"throughput_reps\": $TP_REPS, \"cli_runs\": $CLI_RUNS," \
       "\"handoff_seconds\": $HANDOFF_SECONDS, \"seconds_total\": $((SECONDS - t_all))},"
  echo "\"latency\": $(json_or_null "$PARTS/latency.json"),"
  echo "\"throughput\": $(json_or_null "$PARTS/throughput.json"),"
  echo "\"cli\": $(json_or_null "$PARTS/cli.json"),"
  echo "\"handoff\": ["
  sep=""
  for f in "${handoff_files[@]}"; do
    [[ -s $f ]] || continue
    printf '%s' "$sep"
    tr -d '\n' <"$f"
    sep=$',\n'
  done
  echo
  echo "]}"
} >"$OUT/results.json"
if command -v jq >/dev/null 2>&1 && ! jq empty "$OUT/results.json" 2>/dev/null; then
  echo "run_all: results.json is not valid JSON" >&2
  failed=1
fi

cat "$OUT/results.md"
echo
echo "Results: ${OUT#"$ROOT"/}/results.md, results.json, handoff.png ($((SECONDS - t_all)) s)"
((failed == 0)) || { echo "run_all: some parts failed or found violations (see above)" >&2; exit 1; }
