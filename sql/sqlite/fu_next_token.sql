-- Advances the token counter in the main file, committed on its own, so a token is never
-- handed out twice, whatever happens to the holder.
UPDATE {token_counter} SET value = value + 1 WHERE id = 1 RETURNING value AS token
