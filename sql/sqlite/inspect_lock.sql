SELECT owner, token, hold_count, expires_at - CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER), strategy, lease_seq, ttl_ms
FROM {locks} WHERE name = $1
