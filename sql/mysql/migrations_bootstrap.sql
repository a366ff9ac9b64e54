CREATE TABLE IF NOT EXISTS {migrations} (
    version    INT NOT NULL PRIMARY KEY,
    name       VARCHAR(255) NOT NULL,
    applied_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6),
    compatible_from INT NULL -- schema 8: see migrations/*/0008_compatibility.sql
) ENGINE = InnoDB
