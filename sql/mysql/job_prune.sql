-- One bounded batch ($1 rows) of ledger rows that started more than $2 ms ago (retention).
-- Rows younger than their own period are kept whatever the retention (the slot rule reads
-- them), and so are the job rows (counters, last success).
DELETE FROM {job_runs} WHERE started_ms < (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000) - $2
                          AND started_ms < (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000) - period_ms
ORDER BY started_ms LIMIT $1
