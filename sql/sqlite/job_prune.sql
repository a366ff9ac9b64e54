-- One bounded batch ($1 rows) of ledger rows that started more than $2 ms ago (retention).
-- Rows younger than their own period are kept whatever the retention (the slot rule reads
-- them), and so are the job rows (counters, last success).
DELETE FROM {job_runs}
WHERE rowid IN (SELECT rowid FROM {job_runs} WHERE started_ms < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - $2
                          AND started_ms < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - period_ms
                ORDER BY started_ms LIMIT $1)
