-- As fu_lock, failing at once when the row is locked.
SELECT nextval('{token_seq}') AS token,
       CAST(EXISTS (SELECT 1 FROM {token_incarnation}) AS integer) AS recovered
FROM (SELECT 1 FROM {locks} WHERE name = $1::text FOR UPDATE NOWAIT) AS locked
