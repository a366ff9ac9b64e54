-- Before each migration step (inside its transaction): its DDL waits at most $1 ms for a table
-- lock. ALTER TABLE on {locks} needs an ACCESS EXCLUSIVE lock, which waits behind every open
-- transaction on the table (a select_for_update holder keeps one for as long as it holds) and
-- makes all later lock traffic queue behind it: lock traffic waits at most this long per try.
-- Local to the transaction: gone at its commit or rollback.
SELECT set_config('lock_timeout', CAST($1 AS text) || 'ms', true)
