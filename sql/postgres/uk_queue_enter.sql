-- unique_key waiters queue in the server: take this name's queue lock (a session-level
-- advisory lock, keys (1936483696, hash of "<table prefix>release/<name>", so that lock tables
-- with different prefixes in one database never share a queue; 1936483695 is
-- acquire_unique_key's grants lock), waiting at most lock_timeout (fu_wait, sent just before). Its holder is the
-- lease's holder or the next in line; a release gives it up after committing, so the server
-- hands the lock straight to the next waiter, whose acquire_unique_key follows in the same
-- pipeline. It orders waiters and nothing else: the lease row is the lock.
-- Returns waited = 1 when someone else had it (the lock is contended), 0 when it was free.
SELECT CASE WHEN pg_try_advisory_lock(1936483696, hashtext('{channel}/' || $1::text)) THEN 0
            ELSE (SELECT 1 FROM (SELECT pg_advisory_lock(1936483696, hashtext('{channel}/' || $1::text))) AS w)
       END AS waited
