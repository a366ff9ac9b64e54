-- How long BEGIN IMMEDIATE waits for the per-name lock file (sqlock_busy_timeout is registered
-- on lock sessions: -1 = do not wait, 0 = wait forever, else milliseconds).
-- sqlock: skip-if-unchanged
SELECT sqlock_busy_timeout($1)
