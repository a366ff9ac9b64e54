-- A free row for a name seen for the first time; concurrent creators do nothing.
INSERT INTO {locks} (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)
VALUES ($1, '', '', 0, 'optimistic_version',
        (SELECT value + 1 FROM {token_counter} WHERE id = 1), 1, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))
ON CONFLICT (name) DO NOTHING
