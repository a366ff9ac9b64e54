-- Attempts of job $1 in the caller-named slot $2, newest first.
SELECT slot, slot_fired_ms, outcome, token, owner, host, pid FROM {job_runs}
WHERE name = $1 AND slot = $2
ORDER BY started_ms DESC, token DESC
