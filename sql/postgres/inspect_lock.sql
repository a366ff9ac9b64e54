SELECT owner, token, hold_count,
       CAST(floor(EXTRACT(EPOCH FROM (expires_at - statement_timestamp())) * 1000) AS bigint),
       strategy, lease_seq, ttl_ms
FROM {locks} WHERE name = $1::text
