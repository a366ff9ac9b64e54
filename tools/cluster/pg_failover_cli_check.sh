#!/usr/bin/env bash
# `sqlock run --wait` across a PostgreSQL failover (a check CI runs, issue 13).
#
#   tools/cluster/pg_failover_cli_check.sh DIR
#
# Starts a primary + synchronous standby with tools/cluster/pg_replica.sh in DIR (its parent
# must be traversable by `postgres`), then starts RUNS (default 40) `sqlock run NAME --wait 20s
# -- true` on the two-host URL, one every 25 ms, each on its own name, while the primary is
# crashed and the standby promoted (0.3 s after the first start). Every one must run its
# command (exit 0): a failover in progress is waited out within --wait. Prints the exit codes
# and the slowest run; stops the cluster. Uses SQLOCK (default: build/ci/sqlock of this tree).
set -uo pipefail

TOOL=pg_failover_cli_check
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# die, say, usage_full
# shellcheck source=tools/lib/servers.sh
source "$HERE/../lib/servers.sh"

if [[ ${1:-} != --in-cluster ]]; then
  [[ $# -eq 1 ]] || usage_full
  export SQLOCK=${SQLOCK:-$ROOT/build/ci/sqlock}
  [[ -x $SQLOCK ]] || die "no sqlock CLI ($SQLOCK): build it or set SQLOCK"
  exec "$HERE/pg_replica.sh" run "$1" -- bash "$0" --in-cluster
fi

runs=${RUNS:-40}
url=$SQLOCK_CLUSTER_PG_MULTI_URL
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$SQLOCK" --url "$url" migrate >/dev/null || die "migrate failed"

( sleep 0.3; "$HERE/pg_replica.sh" failover "$SQLOCK_CLUSTER_PG_DIR" >"$work/failover.log" 2>&1
  echo $? >"$work/failover.rc" ) &
failover=$!
for i in $(seq "$runs"); do
  ( started=$(date +%s%N)
    "$SQLOCK" --url "$url" run "cli-failover-$i" --wait 20s --ttl 5s -- true 2>"$work/err.$i"
    echo "$? $((($(date +%s%N) - started) / 1000000))" >"$work/rc.$i" ) &
  sleep 0.025
done
wait
[[ $(cat "$work/failover.rc") == 0 ]] || { cat "$work/failover.log" >&2; die "the failover failed"; }

summary=$(cat "$work"/rc.* | awk '{ n[$1]++; if ($2 > max) max = $2 }
  END { for (rc in n) printf "rc %s x %d, ", rc, n[rc]; printf "slowest %d ms", max }')
echo "pg_failover_cli_check: $runs runs across a failover: $summary"
failed=$(cat "$work"/rc.* | awk '$1 != 0' | wc -l)
if ((failed > 0)); then
  cat "$work"/err.* | sort | uniq -c | sort -rn | head -5 >&2
  exit 1
fi
