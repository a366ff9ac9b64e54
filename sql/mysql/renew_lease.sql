-- Renewal of a lease (unique_key, optimistic_version): owner-and-token checked, and only while
-- the lease is live. No UPDATE ... RETURNING on MariaDB, and affected-row counts depend on
-- CLIENT_FOUND_ROWS, so the outcome is read back with inspect_lock:
-- sqlock: read-back
UPDATE {locks} SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ($3 * 1000) MICROSECOND
WHERE name = $1 AND owner = $2 AND token = $4 AND expires_at > UTC_TIMESTAMP(6)
