-- The oldest library schema version that can share tables whose migrations above $1 (the
-- reading library's own version) were applied: the largest compatible_from among them (a row
-- without one, from before schema 8, counts as its own version). NULL when none is above $1.
SELECT MAX(COALESCE(compatible_from, version)) AS compatible_from FROM {migrations} WHERE version > $1::integer
