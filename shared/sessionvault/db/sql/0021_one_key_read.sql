-- The admission reads the credential once (issue 34, the proofs' cost): sessionvault_enter_key
-- (db/sql/functions/) answers the key's row and sets the tenant's proof in one call. It replaces
-- sessionvault_enter_key_tenant, which set the proof only, so that each admission read the key
-- again (and the riding one a third time). Its owner's membership is borrowed to drop it, as in
-- 0020, and given back.
GRANT sessionvault_proofs TO CURRENT_USER;
DROP FUNCTION sessionvault_enter_key_tenant(bytea, text);
REVOKE sessionvault_proofs FROM CURRENT_USER;
