-- As fu_lock; NOWAIT fails with error 1205 at once when the row is locked.
SELECT NEXTVAL({token_seq}) AS token, incarnation.recovered
FROM (SELECT name FROM {locks} WHERE name = $1 FOR UPDATE NOWAIT) AS locked,
     (SELECT COUNT(*) AS recovered FROM {token_incarnation}) AS incarnation
