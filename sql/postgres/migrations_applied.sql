SELECT version FROM {migrations} ORDER BY version
