-- sqlock schema v7 (SQLite): nothing to create. Fencing (the predicate from
-- sqlock::database::fencing_condition() and the job ledger's fenced writes) no longer asks the
-- clock: a lease is its holder's while it carries the holder's token, whatever expires_at says
-- (see the PostgreSQL and MariaDB migrations of this version).
SELECT 1;
