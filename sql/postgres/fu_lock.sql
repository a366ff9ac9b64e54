-- Lock the row, then draw the fencing token: nextval runs in the outer query, so only after
-- the row lock is granted, and a sequence never goes back even if this transaction rolls back.
SELECT nextval('{token_seq}') FROM (SELECT 1 FROM {locks} WHERE name = $1::text FOR UPDATE) AS locked
