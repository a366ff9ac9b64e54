-- Columns: token (the version), owner, hold_count, held (someone owns it), lease_seq, ttl_ms.
SELECT token, owner, hold_count, CAST(owner <> '' AS integer), lease_seq, ttl_ms
FROM {locks} WHERE name = $1::text
