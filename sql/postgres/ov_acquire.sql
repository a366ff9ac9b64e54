-- optimistic_version, step 2: compare-and-set on the version read in step 1 ($6), on a free row
-- only (a lease held by someone else is first dropped by a waiter that saw it unchanged for its
-- TTL: drop_stale_lease). The new version comes from the token sequence, so versions stay
-- strictly increasing per name even after the row is reaped and re-created.
UPDATE {locks}
SET owner = $2::text, host = $4::text, pid = $5::bigint, strategy = 'optimistic_version',
    token = nextval('{token_seq}'), hold_count = 1, acquired_at = statement_timestamp(),
    expires_at = statement_timestamp() + $3::bigint * interval '1 millisecond',
    lease_seq = lease_seq + 1, ttl_ms = $3::bigint
WHERE name = $1::text AND token = $6::bigint AND owner = '' AND strategy <> 'select_for_update'
RETURNING token
