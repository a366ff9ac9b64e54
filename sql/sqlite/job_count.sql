-- Counts an ended attempt ($2 outcome, $3 started, $4 duration, $5 ended, in ms) in the
-- job's row. Assignments read only their own column and the parameters (MariaDB assigns
-- left to right).
UPDATE {jobs} SET
    succeeded = succeeded + CASE WHEN $2 = 'succeeded' THEN 1 ELSE 0 END,
    failed    = failed + CASE WHEN $2 = 'failed' THEN 1 ELSE 0 END,
    lost      = lost + CASE WHEN $2 = 'lost' THEN 1 ELSE 0 END,
    abandoned = abandoned + CASE WHEN $2 = 'abandoned' THEN 1 ELSE 0 END,
    last_outcome            = $2,
    last_started_ms         = $3,
    last_duration_ms        = $4,
    last_success_started_ms = CASE WHEN $2 = 'succeeded' THEN $3 ELSE last_success_started_ms END,
    last_success_ended_ms   = CASE WHEN $2 = 'succeeded' THEN $5 ELSE last_success_ended_ms END
WHERE name = $1
