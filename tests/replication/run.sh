#!/usr/bin/env bash
# Replicated databases (DESIGN §9) against real clusters on 127.0.0.1, each started from
# Debian packages by tools/cluster/*.sh and stopped afterwards:
#   1. PostgreSQL primary + synchronous hot standby (pg_replica.sh): the replication_postgresql
#      suite (standby refused, standby-first host list, async warning / strict refusal), then
#      replication_postgresql_failover (the primary crashes under held locks); then, on a fresh
#      pair, pg_failover_cli_check.sh (40 `sqlock run --wait` started across a failover);
#   2. PostgreSQL behind PgBouncer in transaction mode (pgbouncer.sh): the replication_pgbouncer
#      suite, then pgbouncer_sqlock_check.sh (every strategy through the CLI, overlap detector);
#   3. a 3-node MariaDB Galera cluster (galera.sh): the replication_galera suite (cluster seen,
#      select_for_update refused, leases exclusive across nodes, a read_only node skipped), then
#      galera_check.sh (concurrent CLI writers on all nodes, a node killed).
# A cluster that cannot start fails the run; nothing is skipped.
#
#   tests/replication/run.sh SOURCE_DIR BUILD_DIR
set -uo pipefail

[[ $# -eq 2 ]] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
conformance=$build/tests/sqlock_conformance_tests
[[ -x $conformance && -x $build/sqlock ]] || { echo "replication: build $build first" >&2; exit 1; }
cluster=$src/tools/cluster

# The servers run as postgres/mysql when we are root: their directories must be reachable.
work=$(mktemp -d /tmp/sqlock-replication.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
export SQLOCK_TEST_SCRATCH=$work/scratch

status=0
step() { # step TITLE CMD...
    local title=$1 t0=$SECONDS
    shift
    echo "=== replication: $title"
    if "$@"; then
        echo "=== replication: $title: passed ($((SECONDS - t0)) s)"
    else
        echo "=== replication: $title: FAILED ($((SECONDS - t0)) s)"
        status=1
    fi
}

# The suites' fixture server is the cluster's primary (or the direct URL behind the pooler).
step "PostgreSQL primary + synchronous standby, failover" \
    "$cluster/pg_replica.sh" run "$work/pg" -- env SQLOCK_TEST_BACKEND=postgresql CONFORMANCE="$conformance" sh -c '
        export SQLOCK_TEST_POSTGRES_URL=$SQLOCK_CLUSTER_PG_PRIMARY_URL
        "$CONFORMANCE" --test-suite=replication_postgresql &&
        "$CONFORMANCE" --test-suite=replication_postgresql_failover'

step "sqlock run --wait across a PostgreSQL failover" \
    env SQLOCK="$build/sqlock" "$cluster/pg_failover_cli_check.sh" "$work/pg-cli"

step "PgBouncer in transaction mode" \
    "$cluster/pgbouncer.sh" run "$work/bouncer" -- env SQLOCK_TEST_BACKEND=postgresql CONFORMANCE="$conformance" \
        SQLOCK="$build/sqlock" CHECK="$cluster/pgbouncer_sqlock_check.sh" BOUNCER_DIR="$work/bouncer" sh -c '
        export SQLOCK_TEST_POSTGRES_URL=$SQLOCK_CLUSTER_DIRECT_URL
        "$CONFORMANCE" --test-suite=replication_pgbouncer && "$CHECK" "$BOUNCER_DIR"'

step "MariaDB Galera, 3 nodes" \
    "$cluster/galera.sh" run "$work/galera" -- env SQLOCK_TEST_BACKEND=mysql CONFORMANCE="$conformance" \
        SQLOCK="$build/sqlock" CHECK="$cluster/galera_check.sh" sh -c '
        export SQLOCK_TEST_MYSQL_URL=$SQLOCK_CLUSTER_GALERA_URL1
        "$CONFORMANCE" --test-suite=replication_galera && bash "$CHECK" --in-cluster'

exit $status
