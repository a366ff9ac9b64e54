UPDATE {locks} SET hold_count = hold_count - 1
WHERE name = $1 AND owner = $2 AND token = $3 AND hold_count = $4
