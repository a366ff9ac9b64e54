-- Not a statement: the condition a caller adds to its own write to fence it
-- (database::fencing_condition), :name and :token standing for the caller's placeholders.
-- No stored functions and no clock: a lease is its holder's until a waiter dropped it
-- (schema 7). No lock needed: a write transaction holds SQLite's only write lock.
EXISTS (SELECT 1 FROM {locks} WHERE name = :name AND token = :token AND owner <> '')
