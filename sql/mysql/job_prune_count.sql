-- How many ledger rows job_prune would delete with retention $1 ms (rows younger
-- than their own period are kept too: the slot rule reads them).
SELECT COUNT(*) AS expired FROM {job_runs} WHERE started_ms < (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000) - $1
  AND started_ms < (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000) - period_ms
