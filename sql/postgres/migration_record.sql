INSERT INTO {migrations} (version, name, compatible_from) VALUES ($1::integer, $2::text, $3::integer)
