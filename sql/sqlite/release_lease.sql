DELETE FROM {locks} WHERE name = $1 AND owner = $2 AND token = $3
