#!/bin/sh
# Runs the README's fenced job ("A fenced job: ...") as written, against an SQLite file: two
# runs in turn both write (their tokens grow); a run whose token is older than the newest the
# store has seen (as when its lock was lost and another holder wrote since) is refused and
# writes nothing.
# usage: run_fenced_example.sh SQLOCK_CLI SOURCE_DIR SCRATCH_DIR
set -eu
cli=$1 src=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch/bin" "$scratch/work"
ln -s "$cli" "$scratch/bin/sqlock"
PATH="$scratch/bin:$PATH"
export SQLOCK_URL="sqlite://$scratch/fence.db"
sqlock migrate >/dev/null
awk '/^```/ { if (grab) exit; inblock = !inblock; next }
     inblock && /^# A fenced job:/ { grab = 1 } grab { print }' "$src/README.md" > "$scratch/example.sh"
grep -q 'sqlock run export' "$scratch/example.sh" || { echo "FAIL: README fenced example not found"; exit 1; }
cd "$scratch/work"
fail() { echo "FAIL: $*"; exit 1; }

sh "$scratch/example.sh" || fail "the first fenced run exited $?"
first=$(cat report.txt.token)
[ -s report.txt ] || fail "the first run wrote nothing"
sh "$scratch/example.sh" || fail "the second fenced run exited $?"
second=$(cat report.txt.token)
[ "$second" -gt "$first" ] || fail "tokens did not grow: $first then $second"
echo "ok: two runs in turn wrote with tokens $first, $second"

# Another holder wrote with a newer token meanwhile: this run's token is older.
echo $((second + 1000)) > report.txt.token
echo "kept" > report.txt
if sh "$scratch/example.sh" 2> "$scratch/stale.err"; then fail "a stale token was allowed to write"; fi
grep -q "fenced off" "$scratch/stale.err" || fail "no 'fenced off' message: $(cat "$scratch/stale.err")"
[ "$(cat report.txt)" = kept ] || fail "the stale run overwrote the newer write"
echo "ok: a run with an older token was fenced off and wrote nothing"
