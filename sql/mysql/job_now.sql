-- The database clock in milliseconds since 1970 UTC (a job's firing time).
SELECT (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000) AS now_ms
