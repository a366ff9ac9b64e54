-- The row select_for_update locks. It never expires, so unique_key never takes it over and the
-- reaper leaves it alone. Not INSERT IGNORE: that would also hide truncation and other errors.
INSERT INTO {locks} (name, owner, host, pid, strategy, token, hold_count, acquired_at, expires_at)
VALUES ($1, '', '', 0, 'select_for_update', 0, 1, UTC_TIMESTAMP(6), '9999-12-31 23:59:59.999999')
ON DUPLICATE KEY UPDATE name = name
