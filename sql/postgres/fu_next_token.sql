SELECT nextval('{token_seq}')
