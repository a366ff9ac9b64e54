-- Break-glass release by an operator (inside BEGIN IMMEDIATE, after inspect_lock): the lease
-- becomes free and its token moves forward (the trigger advances the counter).
-- Only a held row (an expired holder's too): a free row is left alone, its token unchanged
-- (nothing to fence off), and 0 affected rows tell the caller there was nothing to release.
UPDATE {locks}
SET owner = '', hold_count = 1, token = (SELECT value + 1 FROM {token_counter} WHERE id = 1),
    expires_at = MIN(expires_at, CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))
WHERE name = $1 AND strategy <> 'select_for_update' AND owner <> ''
