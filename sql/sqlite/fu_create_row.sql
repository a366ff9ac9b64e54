-- Lock files need no row; kept for the catalog's shape (never needed: fu_lock returns a row).
SELECT 1 WHERE $1 IS NOT NULL
