-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
SELECT owner, token, hold_count,
       expires_at - CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS expires_in_ms,
       strategy, lease_seq, ttl_ms,
       CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS server_clock_ms
FROM {locks} WHERE name = $1
