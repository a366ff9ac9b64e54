-- optimistic_version, step 2: compare-and-set on the version read in step 1 ($6). MariaDB has
-- no UPDATE ... RETURNING and affected-row counts depend on CLIENT_FOUND_ROWS, so the outcome
-- is read back with ov_read:
-- sqlock: read-back
UPDATE {locks}
SET owner = $2, host = $4, pid = $5, strategy = 'optimistic_version',
    token = NEXTVAL({token_seq}), hold_count = 1, acquired_at = UTC_TIMESTAMP(6),
    expires_at = UTC_TIMESTAMP(6) + INTERVAL ($3 * 1000) MICROSECOND
WHERE name = $1 AND token = $6 AND (owner = '' OR expires_at <= UTC_TIMESTAMP(6))
