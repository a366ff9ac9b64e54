-- Release: delete our lease (owner and token checked) and wake this name's waiters in every
-- process (LISTEN "<prefix>release"; the notification is sent when this statement commits).
-- The number of rows returned is the number of leases released (0 = it was not ours).
WITH released AS (
    DELETE FROM {locks} WHERE name = $1::text AND owner = $2::text AND token = $3::bigint
    RETURNING name
)
SELECT pg_notify('{channel}', name) FROM released
