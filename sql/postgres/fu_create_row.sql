-- The row select_for_update locks. It never expires, so unique_key never takes it over and the
-- reaper leaves it alone; it carries no holder (the holder is whoever has it locked).
INSERT INTO {locks} (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)
VALUES ($1::text, '', '', 0, 'select_for_update', 0, 1, statement_timestamp(), '9999-12-31 23:59:59+00')
ON CONFLICT (name) DO NOTHING
