-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
SELECT 1, CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS bigint)
