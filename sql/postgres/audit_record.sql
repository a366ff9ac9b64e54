INSERT INTO {audit} (action, name, actor, old_owner, old_token, new_token)
VALUES ($1::text, $2::text, $3::text, $4::text, $5::bigint, $6::bigint)
