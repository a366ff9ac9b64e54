-- Attempts of job $1 that started at or after $2 (ms), newest first: the interval rule.
SELECT slot, started_ms, outcome, token, owner, host, pid FROM {job_runs}
WHERE name = $1 AND started_ms >= $2
ORDER BY started_ms DESC, token DESC
