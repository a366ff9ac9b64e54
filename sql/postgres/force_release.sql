-- Break-glass release by an operator (inside a transaction, after inspect_lock): the lease
-- becomes free and its token moves forward, so the old holder's renewals, releases and fenced
-- writes all fail from now on. select_for_update rows are left alone (their holder's session
-- is ended instead: fu_terminate_holder).
-- Only a held row (an expired holder's too): a free row is left alone, its token unchanged
-- (nothing to fence off), and 0 affected rows tell the caller there was nothing to release.
UPDATE {locks}
SET owner = '', hold_count = 1, token = nextval('{token_seq}'),
    expires_at = LEAST(expires_at, statement_timestamp())
WHERE name = $1::text AND strategy <> 'select_for_update' AND owner <> ''
