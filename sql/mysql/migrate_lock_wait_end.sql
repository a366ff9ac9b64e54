-- After the migration: the session's metadata lock wait back to the server's default.
SET SESSION lock_wait_timeout = DEFAULT
