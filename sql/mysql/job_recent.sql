-- Attempts of job $1 whose slot's anchor lies in [$2, $3] (ms), newest first: the period rule.
SELECT slot, slot_fired_ms, outcome, token, owner, host, pid FROM {job_runs}
WHERE name = $1 AND slot_fired_ms BETWEEN $2 AND $3
ORDER BY started_ms DESC, token DESC
