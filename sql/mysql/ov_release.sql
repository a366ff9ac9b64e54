-- Release: compare-and-set back to a free row. owner always changes ('' was ours), so the
-- affected-row count is exact with or without CLIENT_FOUND_ROWS.
UPDATE {locks} SET owner = '', hold_count = 1, expires_at = UTC_TIMESTAMP(6)
WHERE name = $1 AND owner = $2 AND token = $3
