-- sqlock schema v2 (SQLite): nothing to create. SQLite has no stored functions; fencing inside
-- the caller's own transaction uses the predicate from sqlock::database::fencing_condition().
-- A write transaction holds SQLite's single write lock, so check and write are atomic.
SELECT 1;
