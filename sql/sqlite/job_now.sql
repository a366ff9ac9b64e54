-- The database clock in milliseconds since 1970 UTC (a job's firing time).
SELECT CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS now_ms
