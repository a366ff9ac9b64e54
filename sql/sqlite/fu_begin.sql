-- The lock: a write transaction on this name's own lock file (never the main database, so no
-- other name is blocked). The OS releases it when the process dies.
BEGIN IMMEDIATE
