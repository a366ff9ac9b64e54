SELECT nextval('{token_seq}') AS token
