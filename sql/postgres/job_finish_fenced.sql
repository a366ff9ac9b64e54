-- job_finish for a success: recorded only while the runner still holds the lease with
-- token $2, so a runner that lost its lock can never mark its slot done.
UPDATE {job_runs} SET
    outcome     = $3::text,
    ended_ms    = CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint),
    duration_ms = CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint) - started_ms,
    exit_status = $4::integer,
    term_signal = $5::integer,
    message     = $6::text
WHERE name = $1::text AND token = $2::bigint AND outcome = 'running'
  AND {holds}($1::text, $2::bigint)
