#!/usr/bin/env bash
# How sqlock behaves through the PgBouncer of tools/cluster/pgbouncer.sh (an empirical check).
#
#   tools/cluster/pgbouncer_sqlock_check.sh DIR [STRATEGY...]
#
# DIR is a running tools/cluster/pgbouncer.sh directory. Uses the installed sqlock CLI
# (SQLOCK=/path overrides). Migrates via the direct URL, then through the bouncer, per strategy
# (default: unique_key select_for_update optimistic_version):
#   1. single: sqlock run NAME --strategy S -- true
#   2. contention: a holder (sleep 3) and, 0.5 s later, a waiter (--wait 10s)
#   3. 4 shell loops x 30 runs of a mkdir-based overlap detector (--wait 30s)
# Prints exit codes, error messages (counted) and OVERLAP counts. Exits 1 on any overlap, on
# any run that does not exit 0 and on a waiter that is not granted.
# BOUNCER_CHECK_CLEAN=1 first closes pgbouncer's server connections (admin RECONNECT) before
# each step, so every step starts with fresh server sessions.
set -uo pipefail

TOOL=pgbouncer_sqlock_check
HERE=$(cd "$(dirname "$0")" && pwd)
# die, say, usage_full
# shellcheck source=tools/lib/servers.sh
source "$HERE/../lib/servers.sh"
[[ $# -ge 1 ]] || usage_full
DIR=$1; shift
[[ -f $DIR/env.sh ]] || { say "no $DIR/env.sh: start tools/cluster/pgbouncer.sh first"; exit 2; }
# shellcheck disable=SC1091
source "$DIR/env.sh"
SQLOCK=${SQLOCK:-sqlock}
B=$SQLOCK_CLUSTER_BOUNCER_URL
strategies=("$@"); ((${#strategies[@]})) || strategies=(unique_key select_for_update optimistic_version)
work=$(mktemp -d) cs=$work/cs overlaps=0 failures=0
trap 'rm -rf "$work"' EXIT

clean() {
  [[ ${BOUNCER_CHECK_CLEAN:-0} == 1 ]] || return 0
  psql -X -q -d "$SQLOCK_CLUSTER_BOUNCER_ADMIN_URL" -c 'RECONNECT sqlock_test' >/dev/null
  sleep 0.3
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

echo "== migrate (direct, then through pgbouncer)"
"$SQLOCK" --url "$SQLOCK_CLUSTER_DIRECT_URL" migrate; echo "   direct rc=$?"
clean
"$SQLOCK" --url "$B" migrate; echo "   bouncer rc=$?"

for s in "${strategies[@]}"; do
  n=pbcheck-$s-$RANDOM
  echo "== $s: single run"
  clean
  "$SQLOCK" --url "$B" run "$n-1" --strategy "$s" -- true
  rc=$?; echo "   rc=$rc"; ((rc == 0)) || failures=$((failures + 1))

  echo "== $s: holder (sleep 3) + waiter (--wait 10s, 0.5 s later)"
  clean
  t0=$(now)
  ( "$SQLOCK" --url "$B" run "$n-2" --strategy "$s" -- sh -c "echo \$(date +%s.%N) >$work/h.got; sleep 3"
    echo "$? $(date +%s.%N)" >"$work/h.end" ) 2>"$work/h.err" &
  h=$!
  sleep 0.5
  "$SQLOCK" --url "$B" run "$n-2" --strategy "$s" --wait 10s -- sh -c "echo \$(date +%s.%N) >$work/w.got" 2>"$work/w.err"
  wrc=$? wend=$(now)
  wait "$h"
  read -r hrc hend <"$work/h.end"
  ((hrc == 0 && wrc == 0)) && [[ -s $work/w.got ]] || failures=$((failures + 1))
  echo "   holder rc=$hrc$([[ -s $work/h.got ]] && echo ", held $(secs "$(cat "$work/h.got")" "$hend") s")"
  sed 's/^/   holder: /' "$work/h.err"
  if [[ -s $work/w.got ]]; then
    echo "   waiter rc=$wrc, got it $(secs "$hend" "$(cat "$work/w.got")") s after the holder ended"
  else
    echo "   waiter rc=$wrc after $(secs "$t0" "$wend") s, never got it"
  fi
  sed 's/^/   waiter: /' "$work/w.err"
  rm -f "$work"/h.* "$work"/w.*

  echo "== $s: 4 loops x 30 runs, mkdir overlap detector"
  clean
  t0=$SECONDS
  for l in 1 2 3 4; do
    ( for _ in $(seq 30); do
        "$SQLOCK" --url "$B" run "$n-3" --strategy "$s" --wait 30s -- \
          sh -c "mkdir $cs || { echo OVERLAP; exit 3; }; sleep 0.02; rmdir $cs" >>"$work/out.$l" 2>>"$work/err.$l"
        echo $? >>"$work/rc.$l"
      done ) &
  done
  wait
  o=$(cat "$work"/out.* | grep -c OVERLAP)
  bad=$(grep -cvx 0 "$work"/rc.* | awk -F: '{ n += $2 } END { print n + 0 }')
  failures=$((failures + bad))
  overlaps=$((overlaps + o))
  echo "   $((SECONDS - t0)) s; exit codes: $(cat "$work"/rc.* | sort | uniq -c | awk '{ printf "%s x rc %s; ", $1, $2 }')overlaps: $o"
  cat "$work"/err.* | sort | uniq -c | sort -rn | sed 's/^/   /'
  rm -rf "$work"/out.* "$work"/err.* "$work"/rc.* "$cs"
done
echo "pgbouncer_sqlock_check: $overlaps overlaps, $failures failed runs"
((overlaps == 0 && failures == 0))
