-- A lease seen unchanged (same token and lease_seq) for its whole TTL on the caller's monotonic
-- clock: its holder's own clock has ended it, so it is deleted (a waiter then takes the name;
-- the reaper just cleans up). Nothing happens when the lease moved on meanwhile.
-- Rows written before schema 5 (ttl_ms 0: their writers do not move lease_seq when they renew)
-- are still judged by the database clock, as those writers expect.
-- $1 name $2 token $3 lease_seq.
WITH dropped AS (
    DELETE FROM {locks}
    WHERE name = $1::text AND token = $2::bigint AND lease_seq = $3::bigint AND owner <> ''
      AND strategy <> 'select_for_update' AND (ttl_ms > 0 OR expires_at <= statement_timestamp())
    RETURNING name
)
SELECT pg_notify('{channel}', name) FROM dropped
