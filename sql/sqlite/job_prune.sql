-- One bounded batch ($1 rows) of ledger rows that started more than $2 ms ago (retention).
-- The job rows (counters, last success) are kept.
DELETE FROM {job_runs}
WHERE rowid IN (SELECT rowid FROM {job_runs} WHERE started_ms < CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) - $2
                ORDER BY started_ms LIMIT $1)
