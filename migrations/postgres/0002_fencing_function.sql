-- sqlock schema v2 (PostgreSQL): fencing inside the caller's own transaction.
--   UPDATE accounts SET ... WHERE id = $1 AND sqlock_holds('lock-name', $token);
-- is true only while lock-name's lease (unique_key, optimistic_version) is held with that
-- token and not expired, by the database clock. FOR SHARE keeps the lease row from being taken
-- over until the caller's transaction ends, so a fenced write can never interleave with a new
-- holder's grant. clock_timestamp(): the check uses the time it runs, not the caller's
-- (possibly long) transaction start.
CREATE OR REPLACE FUNCTION {holds}(lock_name text, lock_token bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    PERFORM 1 FROM {locks}
    WHERE name = lock_name AND token = lock_token AND owner <> ''
      AND expires_at > clock_timestamp()
    FOR SHARE;
    RETURN FOUND;
END
$fn$;
