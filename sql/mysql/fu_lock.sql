-- Lock the row, then draw the fencing token from the sequence (outside the derived tables, so
-- only once the row lock is granted; sequences do not roll back).
-- Second column: whether this server incarnation has been recovered ({token_incarnation}, a
-- MEMORY table: empty after every server start). It is a derived table, materialised before
-- NEXTVAL runs, so a 1 proves the recovery that moved the sequence past every earlier token
-- came first; on a 0 the token is not handed out (see migration 0004).
SELECT NEXTVAL({token_seq}) AS token, incarnation.recovered
FROM (SELECT name FROM {locks} WHERE name = $1 FOR UPDATE) AS locked,
     (SELECT COUNT(*) AS recovered FROM {token_incarnation}) AS incarnation
