DELETE FROM {locks} WHERE name = $1::text AND owner = $2::text AND token = $3::bigint
