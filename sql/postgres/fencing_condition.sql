-- Not a statement: the condition a caller adds to its own write to fence it
-- (database::fencing_condition), :name and :token standing for the caller's placeholders.
{holds}(:name, :token)
