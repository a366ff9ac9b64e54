#!/usr/bin/env bash
# Growth (issue 18): lock() + unlock() latency with 10^2, 10^4, 10^6 rows in the lock table as a
# ratio to an empty table (measured interleaved), `sqlock status` / list() / reap() at 10^6 rows, and the RSS of one
# process holding 1, 100, 10 000 locks — on throwaway PostgreSQL 15 + MariaDB 10.11 servers at
# their Debian default connection limits (tools/testdb.sh, TESTDB_DEFAULT_LIMITS=1) and a SQLite
# file under /tmp, one after the other.
#
#   tools/bench/run_growth.sh      builds the release preset's benchmark if needed
#
# Environment (defaults): GROWTH_BACKENDS ("postgresql mysql sqlite"), GROWTH_SIZES
# ("100,10000,1000000"), GROWTH_ROUNDS (2000 pairs per strategy and size), GROWTH_SETTLE (10,
# seconds the reap may wait for never-released leases), GROWTH_LOCKS ("1 100 10000"),
# GROWTH_SKIP ("" or "table" / "memory"), GROWTH_MEMORY_TIMEOUT (300, seconds per memory run:
# one that hangs is killed and reported as FAILED).
# Writes build/release/bench/growth/results.md and results.json.
# Exit status: 0, or 1 when a run failed (the tables are written either way).
set -euo pipefail

# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
export TESTDB_DEFAULT_LIMITS=1
bench_enter "$ROOT/tools/bench/run_growth.sh" sqlock_growth_bench growth-testdb "$@"

# ---------------------------------------------------------------- inside testdb.sh run
read -r -a backends <<<"${GROWTH_BACKENDS:-postgresql mysql sqlite}"
read -r -a lock_counts <<<"${GROWTH_LOCKS:-1 100 10000}"
SIZES=${GROWTH_SIZES:-100,10000,1000000}
ROUNDS=${GROWTH_ROUNDS:-2000}
SETTLE=${GROWTH_SETTLE:-10}
SKIP=${GROWTH_SKIP:-}
MEMORY_TIMEOUT=${GROWTH_MEMORY_TIMEOUT:-300}

G=$OUT/growth
STAGE=$G/bin # a private copy: someone else may rebuild build/release meanwhile
rm -rf "$G"
mkdir -p "$STAGE" "$G/parts"
cp -a "$BUILD/sqlock" "$BUILD"/libsqlock.so* "$BUILD/sqlock0" "$BUILD/tools/bench/sqlock_growth_bench" "$STAGE/"
export LD_LIBRARY_PATH="$STAGE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
BENCH=$STAGE/sqlock_growth_bench

SQLITE_DIR=$(mktemp -d /tmp/sqlock-growth-XXXXXX)
trap 'rm -rf "$SQLITE_DIR"' EXIT
url_of() {
  case $1 in
    sqlite) echo "sqlite://$SQLITE_DIR/growth.db" ;;
    postgresql) echo "$SQLOCK_TEST_POSTGRES_URL" ;;
    mysql) echo "$SQLOCK_TEST_MYSQL_URL" ;;
  esac
}

# select_for_update pins one server connection per held lock (beside the pool of 8): hold
# only as many as the default limit leaves room for (PostgreSQL 100, MariaDB 151); SQLite
# opens a lock-file connection per lock instead, so it gets every count.
sfu_counts() {
  local c
  for c in "${lock_counts[@]}"; do
    case $1 in
      postgresql) ((c <= 80)) && echo "$c" ;;
      mysql) ((c <= 130)) && echo "$c" ;;
      sqlite) echo "$c" ;;
    esac
  done
  case $1 in
    postgresql) echo 80 ;;
    mysql) echo 130 ;;
  esac
}

failed=0
t_all=$SECONDS
if [[ $SKIP != table ]]; then
  for backend in "${backends[@]}"; do
    t=$SECONDS
    echo "### table size: $backend" >&2
    "$BENCH" table --url "$(url_of "$backend")" --sizes "$SIZES" --rounds "$ROUNDS" \
      --settle "$SETTLE" --sqlock "$STAGE/sqlock" --json "$G/parts/table-$backend.json" \
      --markdown "$G/parts/table-$backend.md" >&2 || { failed=1; echo "FAILED: table $backend" >&2; }
    echo "  ($((SECONDS - t)) s)" >&2
  done
fi
if [[ $SKIP != memory ]]; then
  for backend in "${backends[@]}"; do
    for strategy in unique_key optimistic_version select_for_update; do
      if [[ $strategy == select_for_update ]]; then
        mapfile -t counts < <(sfu_counts "$backend" | sort -n -u)
      else
        counts=("${lock_counts[@]}")
      fi
      for n in "${counts[@]}"; do
        echo "### memory: $backend $strategy $n locks" >&2
        timeout --kill-after=10 "$MEMORY_TIMEOUT" "$BENCH" memory --url "$(url_of "$backend")" --strategy "$strategy" --locks "$n" \
          --json "$G/parts/memory-$backend-$strategy-$n.json" >&2 ||
          { rc=$?; failed=1; echo "FAILED: memory $backend $strategy $n (exit $rc; 124: timed out)" >&2; }
      done
    done
  done
fi
echo "growth: $((SECONDS - t_all)) s" >&2

# ---------------------------------------------------------------- tables
python3 - "$G" <<'EOF'
import glob, json, os, sys
g = sys.argv[1]
label = {"postgresql": "PostgreSQL", "mysql": "MariaDB", "sqlite": "SQLite"}
out = []
tables = [json.load(open(f)) for f in sorted(glob.glob(f"{g}/parts/table-*.json"))]
if tables:
    out += ["| backend | strategy | rows in table | median µs | empty table median µs | median × empty | p99 µs | empty p99 µs | p99 × empty |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for t in tables:
        for s in t["sizes"]:
            for st in s["strategies"]:
                out.append(f"| {label[t['backend']]} | {st['strategy']} | {s['rows']} | "
                           f"{st['median_us']:.0f} | {st['empty_median_us']:.0f} | {st['ratio_median']:.2f}× | "
                           f"{st['p99_us']:.0f} | {st['empty_p99_us']:.0f} | {st['ratio_p99']:.2f}× |")
    out += ["", "| backend | rows | fill s (largest step) | `sqlock status` ms | `status --prometheus` ms | list() ms | reap ms | reaped | statements | deferred |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for t in tables:
        l = t["large"]
        fill = t["sizes"][-1]["fill_seconds"]
        out.append(f"| {label[t['backend']]} | {l['rows']} | {fill:.1f} | {l['status_ms']} | "
                   f"{l['status_prometheus_ms']} | {l['list_ms']} | {l['reap_ms']} | "
                   f"{l['reap_deleted']} | {l['reap_batches']} | {l['reap_deferred']} |")
mem = [json.load(open(f)) for f in glob.glob(f"{g}/parts/memory-*.json")]
order = {"postgresql": 0, "mysql": 1, "sqlite": 2}
strat = {"unique_key": 0, "optimistic_version": 1, "select_for_update": 2}
mem.sort(key=lambda m: (order[m["backend"]], strat[m["strategy"]], m["locks"]))
if mem:
    out += ["", "| backend | strategy | locks held | RSS start MiB | RSS connected MiB | RSS holding MiB | VmHWM MiB | KiB per lock | acquire all ms | listed held |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in mem:
        mib = lambda kb: f"{kb / 1024:.1f}"
        out.append(f"| {label[m['backend']]} | {m['strategy']} | {m['locks']} | {mib(m['rss_start_kb'])} | "
                   f"{mib(m['rss_connected_kb'])} | {mib(m['rss_holding_kb'])} | {mib(m['hwm_holding_kb'])} | "
                   f"{m['per_lock_kb']:.1f} | {m['acquire_ms']} | {m['listed_held']} |")
text = "\n".join(out) + "\n"
open(f"{g}/results.md", "w").write(text)
json.dump({"table": tables, "memory": mem}, open(f"{g}/results.json", "w"), indent=1)
print(text)
EOF
echo "Markdown: ${G#"$ROOT"/}/results.md, JSON: ${G#"$ROOT"/}/results.json"
((failed == 0)) || { echo "run_growth: some runs failed (see above)" >&2; exit 1; }
