-- Release of the last hold: the row stays, marked free (owner empty, expired now), so the next
-- acquire takes it in one statement and its token is drawn under the row lock (see
-- acquire_unique_key). The reaper deletes free rows in time. owner always changes, so the
-- affected-row count is exact with or without CLIENT_FOUND_ROWS.
UPDATE {locks} SET owner = '', hold_count = 1, expires_at = UTC_TIMESTAMP(6)
WHERE name = $1 AND owner = $2 AND token = $3
