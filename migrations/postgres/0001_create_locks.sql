-- sqlock schema v1 (PostgreSQL): the lease table and the fencing-token sequence.
-- The sequence is global, so a token is greater than every earlier token of any name: it stays
-- strictly increasing per name even after a row is deleted and re-created. Sequences survive
-- restarts and jump forward after a crash, never back.
CREATE SEQUENCE IF NOT EXISTS {token_seq} AS bigint MINVALUE 1 NO CYCLE;

CREATE TABLE IF NOT EXISTS {locks} (
    -- COLLATE "C": names compare byte for byte, whatever the database's default collation.
    name        text COLLATE "C" NOT NULL PRIMARY KEY
                CHECK (octet_length(name) BETWEEN 1 AND 255),
    owner       text NOT NULL,
    host        text NOT NULL DEFAULT '',
    pid         bigint NOT NULL DEFAULT 0,
    strategy    text NOT NULL,
    token       bigint NOT NULL,
    hold_count  bigint NOT NULL DEFAULT 1 CHECK (hold_count >= 1),
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

CREATE INDEX IF NOT EXISTS {locks_expires_idx} ON {locks} (expires_at);
