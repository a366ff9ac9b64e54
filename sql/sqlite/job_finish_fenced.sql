-- job_finish for a success: recorded only while the runner still holds the lease with
-- token $2, so a runner that lost its lock can never mark its slot done.
UPDATE {job_runs} SET
    outcome     = $3,
    ended_ms    = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER),
    duration_ms = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - started_ms,
    exit_status = $4,
    term_signal = $5,
    message     = $6
WHERE name = $1 AND token = $2 AND outcome = 'running'
  AND EXISTS (SELECT 1 FROM {locks} WHERE name = $1 AND token = $2 AND owner <> '')
