-- hold_count always changes, so the affected-row count is exact with or without CLIENT_FOUND_ROWS.
UPDATE {locks} SET hold_count = hold_count - 1
WHERE name = $1 AND owner = $2 AND token = $3 AND hold_count = $4
