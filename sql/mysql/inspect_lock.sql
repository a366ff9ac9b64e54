SELECT owner, token, hold_count,
       FLOOR(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1000), strategy,
       lease_seq, ttl_ms
FROM {locks} WHERE name = $1
