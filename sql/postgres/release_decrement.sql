UPDATE {locks} SET hold_count = hold_count - 1
WHERE name = $1::text AND owner = $2::text AND token = $3::bigint AND hold_count = $4::bigint
