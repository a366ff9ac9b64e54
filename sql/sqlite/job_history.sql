-- The newest $2 attempts of job $1, with the database clock's now.
SELECT token, slot, owner, host, pid, period_ms, started_ms, ended_ms, duration_ms,
       exit_status, term_signal, outcome, message,
       CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS now_ms
FROM {job_runs} WHERE name = $1
ORDER BY started_ms DESC, token DESC LIMIT $2
