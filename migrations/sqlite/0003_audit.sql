-- sqlock schema v3 (SQLite): a record of operator actions (sqlock release --force).
CREATE TABLE IF NOT EXISTS {audit} (
    id         INTEGER PRIMARY KEY,
    at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
    action     TEXT NOT NULL,
    name       TEXT NOT NULL,
    actor      TEXT NOT NULL,
    old_owner  TEXT NOT NULL,
    old_token  INTEGER NOT NULL,
    new_token  INTEGER NOT NULL
);
