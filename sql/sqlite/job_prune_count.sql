-- How many ledger rows job_prune would delete with retention $1 ms (rows younger
-- than their own period are kept too: the slot rule reads them).
SELECT COUNT(*) AS expired FROM {job_runs} WHERE started_ms < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - $1
  AND started_ms < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - period_ms
