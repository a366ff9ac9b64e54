-- Holding the write transaction is the lock; the token comes from fu_next_token (main file),
-- committed durably before lock() returns, so there is no incarnation to check (1).
SELECT NULL AS token, 1 AS recovered WHERE $1 IS NOT NULL
