-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- optimistic_version, step 1: the row's version (token), holder, whether someone holds it,
-- and what a waiter watches (lease_seq, ttl_ms); queue_busy: another session holds this name's
-- queue lock (uk_queue_enter: someone waits in line), so a lock() that may queue defers to it.
SELECT token, owner, hold_count, CAST(owner <> '' AS SIGNED), lease_seq, ttl_ms,
       CAST(COALESCE(IS_USED_LOCK(LEFT(CONCAT('{channel}/', SHA2(CONCAT('{channel}/', $1), 256)),
                                       64)) <> CONNECTION_ID(), 0) AS SIGNED),
       TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000
FROM {locks} WHERE name = $1
