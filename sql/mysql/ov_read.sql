-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- optimistic_version, step 1: the row's version (token), holder, whether someone holds it,
-- and what a waiter watches (lease_seq, ttl_ms).
SELECT token, owner, hold_count, CAST(owner <> '' AS SIGNED), lease_seq, ttl_ms,
       TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000
FROM {locks} WHERE name = $1
