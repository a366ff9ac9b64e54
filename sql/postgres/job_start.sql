-- A new attempt, recorded only while the caller still holds the job's lease with token $2
-- (fenced): a runner whose lock was taken over meanwhile records nothing and does not run.
-- $8: the slot's anchor (the opening firing's time; NULL: now).
-- Affected rows: 1 when recorded (an INSERT always changes what it matches).
INSERT INTO {job_runs} (name, token, slot, owner, host, pid, period_ms, started_ms,
                        slot_fired_ms, outcome)
SELECT $1::text, $2::bigint, $3::text, $4::text, $5::text, $6::bigint, $7::bigint,
       CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint), COALESCE($8::bigint, CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint)), 'running'
WHERE {holds}($1::text, $2::bigint)
