#!/bin/sh
# The job the upgrade rig's `sqlock run`s start (tests/upgrade/cross_release.sh): it proves it
# runs alone under its lock and records the grant it was given.
#
#   guarded_job.sh LABEL LOG MARKER [FAIL_ONCE]
#
# Makes the directory MARKER, which must not exist (if it does, another job of the same lock
# runs now: a violation, appended to LOG.violations, exit 3); appends "SQLOCK_TOKEN LABEL
# SQLOCK_SLOT" to LOG while it holds the lock, so LOG's order is the order of the grants; holds
# the lock a moment (widening any overlap); removes MARKER. With FAIL_ONCE (a path): the first
# job that creates that directory fails (exit 1) once it has recorded its grant, as a failed
# run of a scheduled job does.
set -eu
label=$1 log=$2 marker=$3 fail_once=${4:-}
case ${SQLOCK_TOKEN:-} in
    "" | *[!0-9]*) echo "$label: bad SQLOCK_TOKEN '${SQLOCK_TOKEN:-}'" >>"$log.violations"; exit 3 ;;
esac
if ! mkdir "$marker" 2>/dev/null; then
    echo "$label: token $SQLOCK_TOKEN granted while $marker exists (another job runs)" >>"$log.violations"
    exit 3
fi
echo "$SQLOCK_TOKEN $label ${SQLOCK_SLOT:--}" >>"$log"
sleep 0.05
rmdir "$marker"
if [ -n "$fail_once" ] && mkdir "$fail_once" 2>/dev/null; then
    exit 1
fi
exit 0
