-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
SELECT owner, token, hold_count,
       CAST(floor(EXTRACT(EPOCH FROM (expires_at - statement_timestamp())) * 1000) AS bigint),
       strategy, lease_seq, ttl_ms,
       CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS bigint)
FROM {locks} WHERE name = $1::text
