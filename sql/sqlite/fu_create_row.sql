-- The name's row, for `sqlock status` to list (the lock itself is the lock file's write
-- transaction; on the pool, after the lock file was won). Like PostgreSQL's, it never
-- expires, so unique_key never takes it over and the reaper leaves it alone, and it carries
-- no holder: status asks the lock file who holds it. Nothing is written once it exists (a row
-- of another strategy under the same name is left as it is).
INSERT INTO {locks} (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)
VALUES ($1, '', '', 0, 'select_for_update', 0, 1,
        CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER), 253402300799000)
ON CONFLICT (name) DO NOTHING
