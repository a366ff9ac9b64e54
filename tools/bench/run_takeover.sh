#!/usr/bin/env bash
# How long after a holder is killed with SIGKILL does another process get its lock?
#
#   tools/bench/run_takeover.sh SQLOCK_BIN URL [STRATEGY...]
#
# For each strategy (default: unique_key optimistic_version) prints one line:
#   waiting_ms:      a waiter already waiting when the holder (sqlock run, TTL 2 s, renewed every
#                    ttl/3) is killed -- from the kill to the waiter's exit;
#   late_arrival_ms: a waiter that starts 5 s after the kill -- from its start to its exit.
# Each includes starting the waiter's sqlock process. Use a URL of its own (the lock names are
# random, the rows stay until reaped).
set -euo pipefail
BIN=${1:?usage: run_takeover.sh SQLOCK_BIN URL [STRATEGY...]}
URL=${2:?usage: run_takeover.sh SQLOCK_BIN URL [STRATEGY...]}
shift 2
(($#)) || set -- unique_key optimistic_version
"$BIN" --url "$URL" migrate >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ms() { date +%s%3N; }

# Starts a holder of lock $1 (strategy $2) in its own process group; prints its pid once held.
start_holder() {
  rm -f "$work/held"
  setsid "$BIN" --url "$URL" run "$1" --strategy "$2" --ttl 2s -- \
    sh -c "touch '$work/held'; exec sleep 100" >/dev/null 2>&1 &
  local pid=$! i
  for ((i = 0; i < 200; i++)); do [[ -f $work/held ]] && break; sleep 0.05; done
  [[ -f $work/held ]] || { echo "run_takeover: the holder never got the lock" >&2; exit 1; }
  echo "$pid"
}

for strategy in "$@"; do
  name="takeover-$RANDOM$RANDOM"
  holder=$(start_holder "$name" "$strategy")
  sleep 1 # a renewal or two
  "$BIN" --url "$URL" run "$name" --strategy "$strategy" --wait 30s -- true &
  waiter=$!
  sleep 0.5
  t0=$(ms)
  kill -KILL -- "-$holder"
  wait "$waiter"
  waiting=$(($(ms) - t0))

  name="takeover-$RANDOM$RANDOM"
  holder=$(start_holder "$name" "$strategy")
  sleep 1
  kill -KILL -- "-$holder"
  sleep 5
  t0=$(ms)
  "$BIN" --url "$URL" run "$name" --strategy "$strategy" --wait 30s -- true
  echo "$strategy waiting_ms=$waiting late_arrival_ms=$(($(ms) - t0))"
done
