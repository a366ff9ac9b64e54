INSERT INTO {audit} (action, name, actor, old_owner, old_token, new_token)
VALUES ($1, $2, $3, $4, $5, $6)
