INSERT INTO {migrations} (version, name) VALUES ($1, $2)
