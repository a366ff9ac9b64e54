-- sqlock schema v2 (MariaDB): fencing inside the caller's own transaction.
--   UPDATE accounts SET ... WHERE id = ? AND sqlock_holds('lock-name', ?token) = 1;
-- is 1 only while lock-name's lease (unique_key, optimistic_version) is held with that token and
-- not expired, by the database clock. LOCK IN SHARE MODE keeps the lease row from being taken
-- over until the caller's transaction ends. (Creating a function needs CREATE ROUTINE, and with
-- binary logging on, log_bin_trust_function_creators or SUPER.)
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
      AND expires_at > UTC_TIMESTAMP(6)
    LOCK IN SHARE MODE; -- body
    RETURN found_token IS NOT NULL; -- body
END;
