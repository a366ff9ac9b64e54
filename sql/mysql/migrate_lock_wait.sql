-- Before each migration step: its DDL waits at most $1 ms, rounded up to whole seconds, for a
-- table's metadata lock. ALTER TABLE waits for every open transaction that used the table (a
-- select_for_update holder keeps one for as long as it holds), and all later lock traffic
-- queues behind it: lock traffic waits at most this long per try.
SET SESSION lock_wait_timeout = CEILING($1 / 1000)
