-- optimistic_version, step 2: compare-and-set on the version read in step 1 ($6), on a free row
-- only (a lease held by someone else is first dropped by a waiter that saw it unchanged for its
-- TTL: drop_stale_lease). The new version comes from the token counter.
UPDATE {locks}
SET owner = $2, host = $4, pid = $5, strategy = 'optimistic_version',
    token = (SELECT value + 1 FROM {token_counter} WHERE id = 1), hold_count = 1,
    acquired_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER), expires_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) + $3, lease_seq = lease_seq + 1, ttl_ms = $3
WHERE name = $1 AND token = $6 AND owner = '' AND strategy <> 'select_for_update'
RETURNING token
