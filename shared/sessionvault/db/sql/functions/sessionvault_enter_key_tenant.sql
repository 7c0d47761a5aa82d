-- The admission's tenant: the caller the key (or token) hash names, as a proof; nothing when it
-- names no usable credential. Callable by the serving role: without a valid key's hash it sets
-- no tenant.
CREATE OR REPLACE FUNCTION sessionvault_enter_key_tenant(p_key_hash bytea, p_resource text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    k record;
BEGIN
    SELECT * INTO k FROM public.sessionvault_key(p_key_hash, p_resource);
    PERFORM set_config('app.user_id',
                       CASE WHEN k.status = 'ok' THEN sessionvault_mint_proof(k.user_id) ELSE '' END, true);
END $$;

ALTER FUNCTION sessionvault_enter_key_tenant(bytea,text) OWNER TO sessionvault_proofs;
REVOKE ALL ON FUNCTION sessionvault_enter_key_tenant(bytea,text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_enter_key_tenant(bytea,text) TO sessionvault_app;
