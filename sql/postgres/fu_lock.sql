-- Lock the row, then draw the fencing token: nextval runs in the outer query, so only after
-- the row lock is granted, and a sequence never goes back even if this transaction rolls back.
-- Second column: whether this server incarnation has been recovered ({token_incarnation},
-- unlogged: emptied by crash recovery). The statement's snapshot is taken before nextval runs,
-- so a 1 proves the recovery that moved the sequence past every earlier token committed first;
-- on a 0 the token is not handed out (see migration 0004).
SELECT nextval('{token_seq}') AS token,
       CAST(EXISTS (SELECT 1 FROM {token_incarnation}) AS integer) AS recovered
FROM (SELECT 1 FROM {locks} WHERE name = $1::text FOR UPDATE) AS locked
