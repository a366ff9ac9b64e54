-- One attempt's times and outcome.
SELECT started_ms, ended_ms, duration_ms, outcome FROM {job_runs}
WHERE name = $1 AND token = $2
