-- Holding the write transaction is the lock; the token comes from fu_next_token (main file).
SELECT NULL WHERE $1 IS NOT NULL
