-- Attempts of job $1 whose slot opened at or after $2 (ms), newest first: the period rule.
SELECT slot, slot_started_ms, outcome, token, owner, host, pid FROM {job_runs}
WHERE name = $1::text AND slot_started_ms >= $2::bigint
ORDER BY started_ms DESC, token DESC
