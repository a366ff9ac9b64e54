-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
SELECT owner, token, hold_count,
       FLOOR(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1000) AS expires_in_ms,
       strategy, lease_seq, ttl_ms,
       TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000
           AS server_clock_ms
FROM {locks} WHERE name = $1
