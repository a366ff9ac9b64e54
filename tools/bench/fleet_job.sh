#!/usr/bin/env bash
# The command every process of tools/bench/run_fleet.sh runs under the lock (sqlock run NAME --
# fleet_job.sh): proves exclusion on this host and records its grant. Kept to bash builtins
# plus one sleep and one rm, since a fleet of 1000 runs it 1000 times on 2 vCPUs.
#
# Environment: FLEET_DIR (the run's directory), FLEET_T0 (µs, CLOCK_REALTIME, when the process
# was released by the start barrier), FLEET_JOB_SECONDS (default 0.02); SQLOCK_NAME and
# SQLOCK_TOKEN come from sqlock run. Appends to $FLEET_DIR/grants.log one line
#   t0_us start_us end_us pid token name exclusive
# where exclusive is 0 when the name's marker file already existed (another job held it).
start=${EPOCHREALTIME/./}
marker="$FLEET_DIR/held-$SQLOCK_NAME"
exclusive=1
# noclobber: bash opens the marker with O_EXCL, so two holders at once cannot both create it.
set -C
{ : >"$marker"; } 2>/dev/null || exclusive=0
sleep "${FLEET_JOB_SECONDS:-0.02}"
end=${EPOCHREALTIME/./}
# Remove it only if we made it: a violator must not delete the other holder's marker.
((exclusive)) && rm -f "$marker"
# One short line with O_APPEND: written in one write(2), so lines of concurrent jobs never mix.
echo "$FLEET_T0 $start $end $$ ${SQLOCK_TOKEN:--} $SQLOCK_NAME $exclusive" >>"$FLEET_DIR/grants.log"
