-- How attempt ($1, token $2) ended: $3 outcome $4 exit status $5 signal $6 message. Only a
-- running attempt changes (so the affected-row count is exact on every backend).
UPDATE {job_runs} SET
    outcome     = $3,
    ended_ms    = (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000),
    duration_ms = (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000) - started_ms,
    exit_status = $4,
    term_signal = $5,
    message     = $6
WHERE name = $1 AND token = $2 AND outcome = 'running'
