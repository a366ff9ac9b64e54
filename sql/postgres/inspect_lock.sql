-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
SELECT owner, token, hold_count,
       CAST(floor(EXTRACT(EPOCH FROM (expires_at - statement_timestamp())) * 1000) AS bigint)
           AS expires_in_ms,
       strategy, lease_seq, ttl_ms,
       CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS bigint) AS server_clock_ms
FROM {locks} WHERE name = $1::text
