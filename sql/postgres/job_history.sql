-- The newest $2 attempts of job $1, with the database clock's now.
SELECT token, slot, owner, host, pid, period_ms, started_ms, ended_ms, duration_ms,
       exit_status, term_signal, outcome, message,
       CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint) AS now_ms
FROM {job_runs} WHERE name = $1::text
ORDER BY started_ms DESC, token DESC LIMIT $2::bigint
