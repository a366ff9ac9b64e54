-- sqlock schema v7 (PostgreSQL): fencing no longer asks the database's clock.
-- sqlock_holds(name, token) is true while the lease of `name` carries that token and an owner,
-- whatever expires_at says: since schema 5 a lease changes hands only after a waiter has seen it
-- unchanged for its TTL and deleted it (or an operator force-released it), so a lease that looks
-- expired because the server's clock stepped forward is still its holder's, and that holder's
-- fenced writes (and a job runner's ledger records) must not fail. FOR SHARE still keeps the
-- lease row from being dropped until the caller's transaction ends.
CREATE OR REPLACE FUNCTION {holds}(lock_name text, lock_token bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    PERFORM 1 FROM {locks}
    WHERE name = lock_name AND token = lock_token AND owner <> ''
    FOR SHARE;
    RETURN FOUND;
END
$fn$;
