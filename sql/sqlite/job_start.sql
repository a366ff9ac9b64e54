-- A new attempt, recorded only while the caller still holds the job's lease with token $2
-- (fenced): a runner whose lock was taken over meanwhile records nothing and does not run.
-- $8: the slot's anchor (the opening firing's time; NULL: now).
-- Affected rows: 1 when recorded (an INSERT always changes what it matches).
INSERT INTO {job_runs} (name, token, slot, owner, host, pid, period_ms, started_ms,
                        slot_fired_ms, outcome)
SELECT $1, $2, $3, $4, $5, $6, $7,
       CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER), COALESCE($8, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)), 'running'
WHERE EXISTS (SELECT 1 FROM {locks} WHERE name = $1 AND token = $2 AND owner <> '')
