-- Every job, with the start of an attempt in progress (one whose runner still holds a live
-- lease; NULL when none) and the database clock's now.
SELECT j.name, j.period_ms, j.first_fired_ms, j.last_fired_ms, j.last_outcome,
       j.last_started_ms, j.last_duration_ms, j.last_success_started_ms,
       j.last_success_ended_ms, j.succeeded, j.failed, j.lost, j.abandoned, j.skipped,
       (SELECT MIN(r.started_ms) FROM {job_runs} r
        WHERE r.name = j.name AND r.outcome = 'running'
          AND EXISTS (SELECT 1 FROM {locks} l WHERE l.name = r.name AND l.token = r.token AND l.owner <> '' AND l.expires_at > UTC_TIMESTAMP(6))) AS running_since_ms,
       (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000) AS now_ms
FROM {jobs} j ORDER BY j.name
