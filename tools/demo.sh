#!/usr/bin/env bash
# A demo with no database server: three processes contend for one lock through an SQLite file
# with `sqlock run`, and visibly take turns, each grant with a larger fencing token.
#   tools/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for p in g++ cmake make pkg-config libpqxx-dev libpq-dev libmariadb-dev libmysqlcppconn-dev libboost-dev libsqlite3-dev \
         nlohmann-json3-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
    [[ $EUID -eq 0 ]] || { echo "demo: install first: ${need[*]}" >&2; exit 1; }
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target sqlock_cli >/dev/null
sqlock=build/release/sqlock

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SQLOCK_URL="sqlite://$work/locks.db"
"$sqlock" migrate

echo "three workers, two turns each, one lock \"demo\" (each holds it for 0.4 s):"
for worker in A B C; do
    (
        for turn in 1 2; do
            "$sqlock" run demo --ttl 10s -- sh -c \
                "echo \"  worker $worker got the lock, token \$SQLOCK_TOKEN (turn $turn)\"; sleep 0.4"
        done
    ) &
done
wait
echo "tokens only ever grow, and no two workers held the lock at once."
"$sqlock" list
