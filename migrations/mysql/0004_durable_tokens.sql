-- sqlock schema v4 (MariaDB): select_for_update tokens that survive crashes.
-- A select_for_update grant draws NEXTVAL in a transaction that is still open when lock()
-- returns and writes nothing, so its commit flushes nothing; the sequence's cache refill is
-- written to the redo log without a flush: after a crash (kill -9, power loss) the sequence
-- can restart below tokens already handed out. Two tables close that gap without a durable
-- commit per grant:
--   - {token_hwm}: a durable high-water mark (InnoDB, innodb_flush_log_at_trx_commit = 1).
--     Every select_for_update token returned by lock() is <= it: a process raises it (durable
--     commit, in blocks) before handing out a larger one.
--   - {token_incarnation}: a MEMORY table, empty after every server start. select_for_update
--     reads it with every grant; when it is empty, the token is not handed out,
--     {recover_tokens}() moves the sequence past the high-water mark and fills it again.
-- The semicolons inside the procedure body are followed by a comment so the script splitter,
-- which splits at line-ending semicolons, keeps it whole.
-- raises counts the raises. It also makes every raise change the row: an unchanged row would
-- leave the commit with nothing to flush, and InnoDB makes a commit visible before flushing
-- it, so a mark merely read might still be lost in a crash.
CREATE TABLE IF NOT EXISTS {token_hwm} (
    id     INT NOT NULL PRIMARY KEY,
    value  BIGINT NOT NULL,
    raises BIGINT NOT NULL DEFAULT 0
) ENGINE = InnoDB;
-- Every token handed out so far is below the sequence's first uncached value.
INSERT INTO {token_hwm} (id, value) SELECT 1, next_not_cached_value FROM {token_seq}
ON DUPLICATE KEY UPDATE id = id;

-- Left empty here: the first select_for_update grant runs the recovery.
CREATE TABLE IF NOT EXISTS {token_incarnation} (
    id INT NOT NULL PRIMARY KEY
) ENGINE = MEMORY;

-- SETVAL never moves a MariaDB sequence back (a lower value is ignored), so concurrent draws
-- and recoveries are harmless; it takes only a literal, hence the dynamic statement. The
-- marker is inserted after it (MEMORY tables are not transactional: visible at once).
DROP PROCEDURE IF EXISTS {recover_tokens};
CREATE PROCEDURE {recover_tokens}()
    MODIFIES SQL DATA
BEGIN
    DECLARE ceiling BIGINT DEFAULT 0; -- body
    IF NOT EXISTS (SELECT 1 FROM {token_incarnation}) THEN
        SELECT value INTO ceiling FROM {token_hwm} WHERE id = 1; -- body
        EXECUTE IMMEDIATE CONCAT('DO SETVAL({token_seq}, ', ceiling, ')'); -- body
        INSERT INTO {token_incarnation} (id) VALUES (1) ON DUPLICATE KEY UPDATE id = id; -- body
    END IF; -- body
END;
