SELECT NEXTVAL({token_seq})
