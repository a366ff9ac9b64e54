-- Server-side wait for the row lock. innodb_lock_wait_timeout has whole seconds only, so
-- max_statement_time (fractional) ends the wait at the caller's deadline; 0 = wait forever.
-- sqlock: skip-if-unchanged
SET SESSION innodb_lock_wait_timeout = IF($1 <= 0, 100000000, CEIL($1 / 1000)),
            max_statement_time = IF($1 <= 0, 0, $1 / 1000)
