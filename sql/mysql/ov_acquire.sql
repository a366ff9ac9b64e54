-- optimistic_version, step 2: compare-and-set on the version read in step 1 ($6), on a free row
-- only (a lease held by someone else is first dropped by a waiter that saw it unchanged for its
-- TTL: drop_stale_lease). MariaDB has no UPDATE ... RETURNING and affected-row counts depend on
-- CLIENT_FOUND_ROWS, so the outcome is read back with ov_read:
-- sqlock: read-back
UPDATE {locks}
SET owner = $2, host = $4, pid = $5, strategy = 'optimistic_version',
    token = NEXTVAL({token_seq}), hold_count = 1, acquired_at = UTC_TIMESTAMP(6),
    expires_at = UTC_TIMESTAMP(6) + INTERVAL ($3 * 1000) MICROSECOND,
    lease_seq = lease_seq + 1, ttl_ms = $3
WHERE name = $1 AND token = $6 AND owner = '' AND strategy <> 'select_for_update'
