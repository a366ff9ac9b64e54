-- After a uk_queue_enter that failed with lock_timeout (55P03): give up this name's queue lock
-- if this session holds it after all. lock_timeout can fire just as the lock is granted; the
-- statement then fails, yet the session keeps the lock (a session-level advisory lock outlives
-- the failed transaction), and a seat that went back to the pool with it would hold the
-- name's queue for good. Unlocks only a lock pg_locks shows as ours: pg_advisory_unlock of a
-- lock not held would warn (and libpq prints warnings on stderr).
SELECT CAST(COUNT(pg_advisory_unlock(1936483696, hashtext('{channel}/' || $1::text))) AS integer)
  FROM pg_locks
 WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
   AND classid = 1936483696::oid AND objsubid = 2
   AND objid = (hashtext('{channel}/' || $1::text)::bigint & 4294967295)::oid
