-- sqlock schema v1 (MariaDB >= 10.5): the lease table and the fencing-token sequence.
-- A global sequence keeps tokens strictly increasing per name even after a row is deleted and
-- re-created; its cache is skipped, never reused, after a restart.
-- On a Galera node (wsrep_on) the sequence is NOCACHE: Galera refuses a cached one (error 1235),
-- and without a cache every NEXTVAL writes the sequence row into the transaction's replicated
-- write set, so tokens drawn on different nodes are certified against each other and keep
-- increasing cluster-wide. (INCREMENT BY 0 would interleave per-node ranges instead: unique
-- but not increasing.) A single server keeps the default cache, exactly as before.
EXECUTE IMMEDIATE CONCAT('CREATE SEQUENCE IF NOT EXISTS {token_seq} START WITH 1 MINVALUE 1 ',
                         'INCREMENT BY 1 NOCYCLE', IF(@@global.wsrep_on = 1, ' NOCACHE', ''));

CREATE TABLE IF NOT EXISTS {locks} (
    -- VARBINARY: byte-exact comparison, no case folding and no trailing-space padding.
    name        VARBINARY(255) NOT NULL PRIMARY KEY,
    owner       VARBINARY(255) NOT NULL,
    host        VARCHAR(255) NOT NULL DEFAULT '',
    pid         BIGINT NOT NULL DEFAULT 0,
    strategy    VARCHAR(32) NOT NULL,
    token       BIGINT NOT NULL,
    hold_count  BIGINT NOT NULL DEFAULT 1,
    -- DATETIME(6) in UTC from UTC_TIMESTAMP(6): no session time zone, no 2038 limit.
    acquired_at DATETIME(6) NOT NULL,
    expires_at  DATETIME(6) NOT NULL,
    KEY {locks_expires_idx} (expires_at)
) ENGINE = InnoDB;
