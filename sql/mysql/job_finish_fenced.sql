-- job_finish for a success: recorded only while the runner still holds the lease with
-- token $2, so a runner that lost its lock can never mark its slot done.
UPDATE {job_runs} SET
    outcome     = $3,
    ended_ms    = (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000),
    duration_ms = (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000) - started_ms,
    exit_status = $4,
    term_signal = $5,
    message     = $6
WHERE name = $1 AND token = $2 AND outcome = 'running'
  AND {holds}($1, $2) = 1
