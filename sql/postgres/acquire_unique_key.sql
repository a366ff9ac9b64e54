-- Acquire, take over an expired lease, or re-enter, in one autocommit statement.
-- $6 is the token this owner already holds (re-entry) or NULL (new grant).
-- statement_timestamp(), not now(): the lease is computed from this statement's time.
-- A re-entry whose row is gone (reaped, or taken over and released) must not resurrect the
-- lock: the row it inserts is born expired, so it reports granted = 0 and blocks nobody.
-- Token order: grants of one name are serialised by a transaction-level advisory lock taken
-- before nextval() runs (the subquery is evaluated first). Without it, an INSERT that drew its
-- token and then waited (on a releasing DELETE, or the scheduler) could be granted after a
-- later grant with a larger token. Keys: (1936483695 = 'sqlk', hash of the name).
INSERT INTO {locks} AS l
    (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)
SELECT $1::text, $2::text, $4::text, $5::bigint, 'unique_key', nextval('{token_seq}'), 1,
       statement_timestamp(),
       CASE WHEN $6::bigint IS NULL
            THEN statement_timestamp() + $3::bigint * interval '1 millisecond'
            ELSE statement_timestamp() END
FROM (SELECT pg_advisory_xact_lock(1936483695, hashtext($1::text))) AS grants_of_this_name
ON CONFLICT (name) DO UPDATE SET
    owner       = excluded.owner,
    host        = excluded.host,
    pid         = excluded.pid,
    strategy    = excluded.strategy,
    token       = CASE WHEN $6::bigint IS NULL THEN excluded.token ELSE l.token END,
    hold_count  = CASE WHEN $6::bigint IS NULL THEN 1 ELSE l.hold_count + 1 END,
    acquired_at = CASE WHEN $6::bigint IS NULL THEN excluded.acquired_at ELSE l.acquired_at END,
    expires_at  = statement_timestamp() + $3::bigint * interval '1 millisecond'
WHERE ($6::bigint IS NULL AND l.expires_at <= statement_timestamp())
   OR (l.owner = $2::text AND l.token = $6::bigint AND l.expires_at > statement_timestamp())
RETURNING token, hold_count, CAST(expires_at > statement_timestamp() AS integer), 0
