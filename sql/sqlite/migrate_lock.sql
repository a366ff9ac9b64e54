-- Nothing to do: each migration runs in BEGIN IMMEDIATE, which serialises migrators.
SELECT 1 WHERE $1 IS NOT NULL
