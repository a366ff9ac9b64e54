CREATE TABLE IF NOT EXISTS {migrations} (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    compatible_from integer NULL -- schema 8: see migrations/*/0008_compatibility.sql
)
