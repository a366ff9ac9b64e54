-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
SELECT owner, token, hold_count,
       FLOOR(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1000), strategy,
       lease_seq, ttl_ms,
       TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000
FROM {locks} WHERE name = $1
