-- Acquire, take over an expired lease, or re-enter, in one autocommit statement.
-- $6 is the token this owner already holds (re-entry) or NULL (new grant).
-- 'now' is fixed for the whole statement, so every NOW below is the same instant.
-- A re-entry whose row is gone (reaped, or taken over and released) must not resurrect the
-- lock: the row it inserts is born expired, so it reports granted = 0 and blocks nobody.
INSERT INTO {locks} AS l
    (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)
VALUES ($1, $2, $4, $5, 'unique_key',
        (SELECT value + 1 FROM {token_counter} WHERE id = 1), 1,
        CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER),
        CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + CASE WHEN $6 IS NULL THEN $3 ELSE 0 END)
ON CONFLICT (name) DO UPDATE SET
    owner       = excluded.owner,
    host        = excluded.host,
    pid         = excluded.pid,
    strategy    = excluded.strategy,
    token       = CASE WHEN $6 IS NULL THEN excluded.token ELSE l.token END,
    hold_count  = CASE WHEN $6 IS NULL THEN 1 ELSE l.hold_count + 1 END,
    acquired_at = CASE WHEN $6 IS NULL THEN excluded.acquired_at ELSE l.acquired_at END,
    expires_at  = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + $3
WHERE ($6 IS NULL AND l.expires_at <= CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))
   OR (l.owner = $2 AND l.token = $6 AND l.expires_at > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))
RETURNING token, hold_count, expires_at > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER), 0
