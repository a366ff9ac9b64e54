-- optimistic_version, step 1: the row's version (token), holder, whether someone holds it,
-- and what a waiter watches (lease_seq, ttl_ms).
SELECT token, owner, hold_count, CAST(owner <> '' AS SIGNED), lease_seq, ttl_ms
FROM {locks} WHERE name = $1
