-- How attempt ($1, token $2) ended: $3 outcome $4 exit status $5 signal $6 message. Only a
-- running attempt changes (so the affected-row count is exact on every backend).
UPDATE {job_runs} SET
    outcome     = $3::text,
    ended_ms    = CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint),
    duration_ms = CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint) - started_ms,
    exit_status = $4::integer,
    term_signal = $5::integer,
    message     = $6::text
WHERE name = $1::text AND token = $2::bigint AND outcome = 'running'
