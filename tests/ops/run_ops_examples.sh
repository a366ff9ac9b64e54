#!/bin/sh
# Runs the scheduled-job examples as written: every command line of examples/ops/crontab-jobs
# (and the README's fleet lines, which are the same commands) on 5 simulated hosts firing with
# up to 2 s of skew, against an SQLite file; each job must run exactly once. Then checks the
# Prometheus alert rules with promtool (a YAML parse when promtool is missing).
# usage: run_ops_examples.sh SQLOCK_CLI SOURCE_DIR SCRATCH_DIR
set -eu
cli=$1 src=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch/bin" "$scratch/work"
ln -s "$cli" "$scratch/bin/sqlock"
PATH="$scratch/bin:$PATH"
export SQLOCK_URL="sqlite://$scratch/jobs.db"
sqlock migrate >/dev/null
cd "$scratch/work"
for stub in report.sh sync-invoices.sh digest.sh; do
    printf '#!/bin/sh\necho "$SQLOCK_SLOT $SQLOCK_TOKEN" >> %s.log\nsleep 0.3\n' "$stub" > "$stub"
    chmod +x "$stub"
done

failures=0
# Command lines of the crontab: drop comments, variables and the five schedule fields; cron
# turns "\%" into "%".
grep -v '^#' "$src/examples/ops/crontab-jobs" | grep -v '^[A-Z_]*=' | grep -v '^ *$' |
    sed 's/^[^ ]* *[^ ]* *[^ ]* *[^ ]* *[^ ]* *//; s/\\%/%/g' > "$scratch/commands"
while IFS= read -r command; do
    pids=""
    for host in 1 2 3 4 5; do
        # Skew: host 1 at once, host 5 after 2 s, the others in between.
        ( sleep "$(awk -v h=$host 'BEGIN { srand(); print (h == 1 ? 0 : h == 5 ? 2 : rand() * 2) }')"
          sh -c "$command" ) &
        pids="$pids $!"
    done
    for pid in $pids; do
        if ! wait "$pid"; then
            echo "FAIL: a host's firing exited non-zero: $command"
            failures=$((failures + 1))
        fi
    done
    script=$(echo "$command" | sed 's/.* -- //')
    runs=$(wc -l < "$script.log")
    if [ "$runs" -ne 1 ]; then
        echo "FAIL: $command ran $runs times on 5 hosts (want 1)"
        failures=$((failures + 1))
    else
        echo "ok: $command ran once on 5 hosts"
    fi
done < "$scratch/commands"
sqlock history nightly-report
sqlock status
[ "$(wc -l < "$scratch/commands")" -ge 3 ] || { echo "FAIL: no commands found"; exit 1; }

# The README's crontab block is this file's lines, word for word.
awk '/^```/ { inblock = !inblock; next } inblock && /^SQLOCK_URL=postgresql:\/\/sqlock_jobs/ { grab = 1 }
     inblock && grab { print } !inblock { grab = 0 }' "$src/README.md" > "$scratch/readme-crontab"
[ -s "$scratch/readme-crontab" ] || { echo "FAIL: README crontab block not found"; exit 1; }
while IFS= read -r line; do
    if ! grep -Fxq -- "$line" "$src/examples/ops/crontab-jobs"; then
        echo "FAIL: README crontab line not in examples/ops/crontab-jobs: $line"
        failures=$((failures + 1))
    fi
done < "$scratch/readme-crontab"

# The README's other once-per command lines, as written, each on a fresh database.
grep -E '^sqlock run .*(--once-per|--slot)' "$src/README.md" | sed 's/ *#.*$//' | sort -u \
    > "$scratch/readme-commands"
[ -s "$scratch/readme-commands" ] || { echo "FAIL: no README commands found"; exit 1; }
n=0
while IFS= read -r command; do
    n=$((n + 1))
    export SQLOCK_URL="sqlite://$scratch/readme-$n.db"
    sqlock migrate >/dev/null
    : > report.sh.log
    pids=""
    for host in 1 2 3 4 5; do
        ( sleep "$(awk -v h=$host 'BEGIN { srand(); print (h == 1 ? 0 : h == 5 ? 2 : rand() * 2) }')"
          sh -c "$command" ) &
        pids="$pids $!"
    done
    for pid in $pids; do
        wait "$pid" || { echo "FAIL: a host's firing exited non-zero: $command"; failures=$((failures + 1)); }
    done
    script=$(echo "$command" | sed 's/.* -- //')
    runs=$(wc -l < "$script.log")
    if [ "$runs" -ne 1 ]; then
        echo "FAIL: README: $command ran $runs times on 5 hosts (want 1)"
        failures=$((failures + 1))
    else
        echo "ok: README: $command ran once on 5 hosts"
    fi
    sqlock history nightly-report > /dev/null
done < "$scratch/readme-commands"

# The systemd timer and service, checked offline (binary and paths swapped for local ones).
if command -v systemd-analyze >/dev/null 2>&1; then
    mkdir -p "$scratch/units" && : > "$scratch/units/jobs.env"
    sed "s|/usr/bin/sqlock|$cli|; s|/etc/sqlock/jobs.env|$scratch/units/jobs.env|; s|/opt/app/report.sh|/bin/true|" \
        "$src/examples/ops/nightly-report.service" > "$scratch/units/nightly-report.service"
    cp "$src/examples/ops/nightly-report.timer" "$scratch/units/"
    if ! (cd "$scratch/units" && systemd-analyze verify ./nightly-report.timer ./nightly-report.service); then
        echo "FAIL: systemd-analyze verify examples/ops/nightly-report.{timer,service}"
        failures=$((failures + 1))
    fi
fi

if command -v promtool >/dev/null 2>&1; then
    promtool check rules "$src/examples/ops/sqlock-alerts.yml"
    (cd "$src/examples/ops" && promtool test rules sqlock-alerts.test.yml)
else
    python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' \
        "$src/examples/ops/sqlock-alerts.yml"
    echo "promtool not installed: YAML parsed only"
fi
[ "$failures" -eq 0 ]
