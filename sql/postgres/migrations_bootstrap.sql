CREATE TABLE IF NOT EXISTS {migrations} (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT statement_timestamp()
)
