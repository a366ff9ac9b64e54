SELECT NEXTVAL({token_seq}) AS token
