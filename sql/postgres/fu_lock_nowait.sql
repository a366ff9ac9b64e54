SELECT nextval('{token_seq}')
FROM (SELECT 1 FROM {locks} WHERE name = $1::text FOR UPDATE NOWAIT) AS locked
