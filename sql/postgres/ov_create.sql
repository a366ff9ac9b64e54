-- A free row for a name seen for the first time. Concurrent creators do not fail: all but one
-- do nothing, and the compare-and-set that follows picks exactly one holder.
INSERT INTO {locks} (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)
VALUES ($1::text, '', '', 0, 'optimistic_version', nextval('{token_seq}'), 1,
        statement_timestamp(), statement_timestamp())
ON CONFLICT (name) DO NOTHING
