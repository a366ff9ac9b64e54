-- sqlock: server-clock (last column: the server's wall clock, ms since the Unix epoch)
-- Columns: token (the version), owner, hold_count, held (someone owns it), lease_seq, ttl_ms,
-- queue_busy (0 here: reading pg_locks costs more than the read; a queued head is woken by the
-- release's NOTIFY instead, as for unique_key), deferred: which of sqlock's own locks $2, $3
-- (a semaphore's queue, a shared mutex's writer gate; NULL: none) someone holds (1: $2, 2: $3),
-- so that a permit is not taken past them without another round trip.
SELECT token, owner, hold_count, CAST(owner <> '' AS integer), lease_seq, ttl_ms, 0,
       CAST(EXISTS (SELECT 1 FROM {locks} WHERE name = $2::text AND owner <> '') AS integer)
           + 2 * CAST(EXISTS (SELECT 1 FROM {locks} WHERE name = $3::text AND owner <> '')
                      AS integer),
       CAST(floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS bigint)
FROM {locks} WHERE name = $1::text
