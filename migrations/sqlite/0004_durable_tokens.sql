-- sqlock schema v4 (SQLite): nothing to create. select_for_update draws its token with
-- fu_next_token, an UPDATE of the token counter committed on its own with synchronous = FULL
-- before lock() returns, so tokens already survive crashes and power loss here.
SELECT 1;
