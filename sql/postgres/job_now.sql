-- The database clock in milliseconds since 1970 UTC (a job's firing time).
SELECT CAST(floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000) AS bigint) AS now_ms
