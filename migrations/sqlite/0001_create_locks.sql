-- sqlock schema v1 (SQLite): the lease table and the fencing-token counter.
-- Times are integer milliseconds since 1970 on the database clock: CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
-- (unixepoch(..., 'subsec') would be NULL on SQLite 3.40).
CREATE TABLE IF NOT EXISTS {token_counter} (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
);
INSERT OR IGNORE INTO {token_counter} (id, value) VALUES (1, 0);

CREATE TABLE IF NOT EXISTS {locks} (
    -- TEXT with the default BINARY collation: names compare byte for byte.
    name        TEXT NOT NULL PRIMARY KEY CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 255),
    owner       TEXT NOT NULL,
    host        TEXT NOT NULL DEFAULT '',
    pid         INTEGER NOT NULL DEFAULT 0,
    strategy    TEXT NOT NULL,
    token       INTEGER NOT NULL,
    hold_count  INTEGER NOT NULL DEFAULT 1 CHECK (hold_count >= 1),
    acquired_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS {locks_expires_idx} ON {locks} (expires_at);

-- Every token written moves the counter forward, so tokens never repeat or go back, even after
-- rows are deleted. Writers are serialised by SQLite, so read-counter-then-write is atomic.
CREATE TRIGGER IF NOT EXISTS {locks_token_on_insert} AFTER INSERT ON {locks}
WHEN NEW.token > (SELECT value FROM {token_counter} WHERE id = 1)
BEGIN
    UPDATE {token_counter} SET value = NEW.token WHERE id = 1;
END;
CREATE TRIGGER IF NOT EXISTS {locks_token_on_update} AFTER UPDATE OF token ON {locks}
WHEN NEW.token > (SELECT value FROM {token_counter} WHERE id = 1)
BEGIN
    UPDATE {token_counter} SET value = NEW.token WHERE id = 1;
END;
