-- One bounded batch ($1 rows) of ledger rows that started more than $2 ms ago (retention).
-- The job rows (counters, last success) are kept.
DELETE FROM {job_runs} WHERE started_ms < (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000) - $2
ORDER BY started_ms LIMIT $1
