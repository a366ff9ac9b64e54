-- A free row for a name seen for the first time. Concurrent creators do not fail: all but one
-- change nothing, and the compare-and-set that follows picks exactly one holder. Not INSERT
-- IGNORE, which would also hide truncation and other errors.
INSERT INTO {locks} (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)
VALUES ($1, '', '', 0, 'optimistic_version', NEXTVAL({token_seq}), 1,
        UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE name = name
