-- sqlock schema v7 (MariaDB): fencing no longer asks the database's clock.
-- sqlock_holds(name, token) is 1 while the lease of `name` carries that token and an owner,
-- whatever expires_at says: since schema 5 a lease changes hands only after a waiter has seen it
-- unchanged for its TTL and deleted it (or an operator force-released it), so a lease that looks
-- expired because the server's clock stepped forward is still its holder's, and that holder's
-- fenced writes (and a job runner's ledger records) must not fail. LOCK IN SHARE MODE still
-- keeps the lease row from being dropped until the caller's transaction ends.
-- The semicolons inside the body are followed by a comment so the script splitter, which
-- splits at line-ending semicolons, keeps the function whole.
DROP FUNCTION IF EXISTS {holds};
CREATE FUNCTION {holds}(lock_name VARBINARY(255), lock_token BIGINT) RETURNS TINYINT
    NOT DETERMINISTIC READS SQL DATA
BEGIN
    DECLARE found_token BIGINT DEFAULT NULL; -- body
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET found_token = NULL; -- body
    SELECT token INTO found_token FROM {locks}
    WHERE name = lock_name AND token = lock_token AND owner <> ''
    LOCK IN SHARE MODE; -- body
    RETURN found_token IS NOT NULL; -- body
END;
