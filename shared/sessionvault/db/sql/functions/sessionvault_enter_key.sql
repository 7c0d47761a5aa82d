-- The admission's one read of the credential: the row sessionvault_key answers for the key's
-- (or token's) SHA-256 (none for an unknown one), and the transaction's tenant set to a proof of
-- that caller when the credential is usable, '' otherwise (never the id: see
-- app_current_user_id.sql). Callable by the serving role: without a valid credential's hash it
-- sets no tenant. One read and one mint per admission: the admission functions call nothing
-- else to learn whose call it is.
CREATE OR REPLACE FUNCTION sessionvault_enter_key(p_key_hash bytea, p_resource text)
RETURNS TABLE (user_id uuid, status text, dek_wrapped bytea, key_id text, scopes text[], client_id text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    k record;
BEGIN
    SELECT * INTO k FROM public.sessionvault_key(p_key_hash, p_resource);
    PERFORM set_config('app.user_id',
                       CASE WHEN k.status = 'ok' THEN public.sessionvault_mint_proof(k.user_id) ELSE '' END, true);
    IF k.status IS NOT NULL THEN
        user_id := k.user_id;
        status := k.status;
        dek_wrapped := k.dek_wrapped;
        key_id := k.key_id;
        scopes := k.scopes;
        client_id := k.client_id;
        RETURN NEXT;
    END IF;
END $$;

ALTER FUNCTION sessionvault_enter_key(bytea,text) OWNER TO sessionvault_proofs;
REVOKE ALL ON FUNCTION sessionvault_enter_key(bytea,text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_enter_key(bytea,text) TO sessionvault_app;
