CREATE TABLE IF NOT EXISTS {migrations} (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
    compatible_from INTEGER -- schema 8: see migrations/*/0008_compatibility.sql
)
