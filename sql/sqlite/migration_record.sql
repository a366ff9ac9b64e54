INSERT INTO {migrations} (version, name, compatible_from) VALUES ($1, $2, $3)
