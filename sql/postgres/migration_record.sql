INSERT INTO {migrations} (version, name) VALUES ($1::integer, $2::text)
