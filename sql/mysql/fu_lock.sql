-- Lock the row, then draw the fencing token from the sequence (outside the derived table, so
-- only once the row lock is granted; sequences do not roll back).
SELECT NEXTVAL({token_seq}) FROM (SELECT name FROM {locks} WHERE name = $1 FOR UPDATE) AS locked
