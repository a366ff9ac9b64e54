#!/usr/bin/env bash
# sqlock on a 3-node MariaDB Galera cluster with writers on every node (issue 13): a check CI runs.
#
#   tools/cluster/galera_check.sh DIR [STRATEGY...]
#
# Starts a throwaway cluster with tools/cluster/galera.sh in DIR (its parent must be
# traversable by `mysql`, e.g. under /tmp), runs the checks below, stops the cluster. A cluster
# that cannot start fails the check (exit 1), it is never skipped. Uses SQLOCK (default: the
# build tree's build/ci/sqlock, else `sqlock` on PATH).
#   1. sqlock migrate through node 1; every node then reports the current schema.
#   2. Per lease strategy (default unique_key optimistic_version): GALERA_CHECK_RUNS (default
#      96) concurrent `sqlock run` of one name, spread round robin over nodes 1, 2, 3; half with
#      --wait 0 (one try: exit 0 or 75), half with --wait 60s (exit 0). Each holds for 10-60 ms
#      and records when its command started and ended and $SQLOCK_TOKEN. Checked: no two holds
#      overlap (nor does a mkdir-based detector fire), tokens strictly increase in grant order,
#      every exit status is 0 or 75 (any other fails), every --wait 60s run got the lock.
#   3. select_for_update on each node: exit 78 with a message naming Galera.
#   4. Node 1 killed: the host-list URL (nodes 1, 2, 3) still connects and locks (both lease
#      strategies, and a --wait 0 run while the lock is held elsewhere exits 75).
# Prints one summary line per strategy; exits 0 when everything held, 1 otherwise.
set -uo pipefail

TOOL=galera_check
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# die, say, usage_full
# shellcheck source=tools/lib/servers.sh
source "$HERE/../lib/servers.sh"

if [[ ${1:-} != --in-cluster ]]; then
  [[ $# -ge 1 ]] || usage_full
  DIR=$1; shift
  if [[ -z ${SQLOCK:-} ]]; then
    if [[ -x $ROOT/build/ci/sqlock ]]; then SQLOCK=$ROOT/build/ci/sqlock; else SQLOCK=sqlock; fi
  fi
  command -v "$SQLOCK" >/dev/null || die "no sqlock CLI ($SQLOCK): build it or set SQLOCK"
  export SQLOCK
  start=$SECONDS
  "$HERE/galera.sh" run "$DIR" -- bash "$0" --in-cluster "$@"
  rc=$?
  echo "galera_check: $( ((rc == 0)) && echo PASS || echo "FAIL (exit $rc)") in $((SECONDS - start)) s"
  exit $((rc == 0 ? 0 : 1))
fi
shift
[[ -n ${SQLOCK_CLUSTER_GALERA_URL3:-} ]] || die "no cluster environment (run through galera.sh)"
strategies=("$@"); ((${#strategies[@]})) || strategies=(unique_key optimistic_version)
RUNS=${GALERA_CHECK_RUNS:-96}
urls=("$SQLOCK_CLUSTER_GALERA_URL1" "$SQLOCK_CLUSTER_GALERA_URL2" "$SQLOCK_CLUSTER_GALERA_URL3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "   FAIL: $*"; failures=$((failures + 1)); }

echo "== migrate through node 1"
"$SQLOCK" --url "${urls[0]}" migrate || fail "migrate through node 1 exited $?"
for n in 1 2 3; do
  out=$("$SQLOCK" --url "${urls[n - 1]}" migrate --status 2>&1) || fail "node $n: migrate --status exited $?: $out"
  grep -q "(0 pending)" <<<"$out" || fail "node $n: migrations pending: $out"
done

# One `sqlock run`: its command writes "start_ns end_ns token" to out/$i when the lock was
# granted; its exit status goes to rc/$i.
# Write sets that lost certification or were aborted by a replicated one, summed over the
# live nodes: shows that the runs raced across nodes (each such loser must be "not granted").
conflicts() {
  local n total=0 v
  for n in 1 2 3; do
    local sock=SQLOCK_CLUSTER_GALERA_SOCKET$n
    v=$(mariadb -S "${!sock}" -u root -N -B -e "SELECT SUM(VARIABLE_VALUE) FROM
          information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN
          ('WSREP_LOCAL_CERT_FAILURES', 'WSREP_LOCAL_BF_ABORTS')" 2>/dev/null) || v=0
    total=$((total + ${v:-0}))
  done
  echo "$total"
}

one_run() {
  local i=$1 strategy=$2 name=$3 wait=$4 url=$5
  "$SQLOCK" --url "$url" run "$name" --strategy "$strategy" --ttl 10s --wait "$wait" -- sh -c '
      s=$(date +%s%N)
      mkdir "$0/cs" 2>/dev/null || echo overlap >>"$0/overlaps"
      sleep "0.0$(( $(od -An -N1 -tu1 /dev/urandom) % 5 + 1 ))"
      rmdir "$0/cs"
      echo "$s $(date +%s%N) $SQLOCK_TOKEN" >"$0/out/$1"' "$work/$strategy" "$i" \
    2>"$work/$strategy/err/$i"
  echo $? >"$work/$strategy/rc/$i"
}

for s in "${strategies[@]}"; do
  echo "== $s: $RUNS concurrent runs over 3 nodes"
  d=$work/$s
  mkdir -p "$d/out" "$d/rc" "$d/err"
  name=galera-check-$s-$RANDOM
  c0=$(conflicts)
  t0=$(date +%s%N)
  for ((i = 0; i < RUNS; i++)); do
    wait=0; ((i % 2)) && wait=60s
    one_run "$i" "$s" "$name" "$wait" "${urls[i % 3]}" &
  done
  wait
  secs=$(( ($(date +%s%N) - t0) / 1000000 ))
  raced=$(( $(conflicts) - c0 ))
  # Sorted by start: holds must not overlap and tokens must strictly increase.
  check=$(cat "$d"/out/* 2>/dev/null | sort -n | awk '
      NR > 1 && $1 < end { o++ }
      NR > 1 && $3 <= tok { t++ }
      { end = $2; tok = $3; n++ }
      END { printf "%d %d %d", n, o, t }')
  read -r granted overlaps token_errors <<<"$check"
  detector=$(cat "$d/overlaps" 2>/dev/null | wc -l)
  ok=0 busy=0 other=0 waited_not_granted=0
  for ((i = 0; i < RUNS; i++)); do
    rc=$(cat "$d/rc/$i")
    case $rc in
      0) ok=$((ok + 1)) ;;
      75) busy=$((busy + 1)); ((i % 2)) && waited_not_granted=$((waited_not_granted + 1)) ;;
      *) other=$((other + 1)); fail "run $i (node $((i % 3 + 1))) exited $rc: $(head -c 400 "$d/err/$i")" ;;
    esac
  done
  ((granted == ok)) || fail "$ok runs exited 0 but $granted commands recorded a hold"
  ((overlaps == 0 && detector == 0)) || fail "$overlaps overlapping holds ($detector by the mkdir detector)"
  ((token_errors == 0)) || fail "$token_errors tokens did not increase in grant order"
  ((waited_not_granted == 0)) || fail "$waited_not_granted runs with --wait 60s were not granted"
  ((ok > 0)) || fail "no run was granted"
  echo "   $s: $RUNS runs in $secs ms: rc 0 x $ok, rc 75 x $busy, other x $other;" \
    "overlaps $overlaps (detector $detector), token order errors $token_errors," \
    "certification conflicts/BF aborts $raced," \
    "tokens $(cat "$d"/out/* | sort -n | awk 'NR == 1 { f = $3 } { l = $3 } END { print f ".." l }')"
done

echo "== select_for_update on each node: refused (exit 78)"
for n in 1 2 3; do
  out=$("$SQLOCK" --url "${urls[n - 1]}" run galera-check-fu --strategy select_for_update \
    --wait 0 -- true 2>&1)
  rc=$?
  if [[ $rc != 78 ]] || ! grep -q Galera <<<"$out"; then
    fail "node $n: select_for_update exited $rc (want 78, naming Galera): $out"
  fi
done
echo "   exit 78 on nodes 1-3"

echo "== node 1 killed: the host-list URL moves on to node 2"
"$HERE/galera.sh" kill "$SQLOCK_CLUSTER_GALERA_DIR" 1 || fail "could not kill node 1"
for s in "${strategies[@]}"; do
  out=$("$SQLOCK" --url "$SQLOCK_CLUSTER_GALERA_URL" run galera-check-failover-$s --strategy "$s" \
    --wait 10s -- sh -c 'echo "token=$SQLOCK_TOKEN"' 2>&1)
  rc=$?
  [[ $rc == 0 && $out == token=* ]] || fail "$s through the host list: exit $rc: $out"
  # Held through node 2, tried through node 3: not granted (75), not an error.
  "$SQLOCK" --url "$SQLOCK_CLUSTER_GALERA_URL" run galera-check-held-$s --strategy "$s" -- \
    sh -c 'touch "$0/held"; while [ ! -e "$0/done" ]; do sleep 0.05; done' "$work/$s" &
  holder=$!
  for _ in $(seq 200); do [[ -e $work/$s/held ]] && break; sleep 0.05; done
  [[ -e $work/$s/held ]] || fail "$s: the holder through the host list never got the lock"
  out=$("$SQLOCK" --url "${urls[2]}" run galera-check-held-$s --strategy "$s" --wait 0 -- true 2>&1)
  rc=$?
  [[ $rc == 75 ]] || fail "$s: a second holder through node 3 exited $rc (want 75): $out"
  touch "$work/$s/done"
  wait "$holder" || fail "$s: the holder through the host list exited $?"
  echo "   $s: locked through the host list (node 1 down); contender on node 3 exit $rc"
done

((failures == 0)) || { echo "galera_check: $failures failures"; exit 1; }
