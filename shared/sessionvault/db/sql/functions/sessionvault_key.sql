CREATE OR REPLACE FUNCTION sessionvault_key(p_key_hash bytea, p_resource text)
RETURNS TABLE (user_id uuid, status text, dek_wrapped bytea, key_id text, scopes text[], client_id text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    k record;
    t record;
BEGIN
    SELECT ak.id, ak.user_id, ak.revoked_at, ak.last_used_at, ak.scopes,
           u.disabled_at, u.dek_wrapped, u.key_id
    INTO k
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id
    WHERE ak.key_hash = p_key_hash;
    IF k.id IS NULL THEN
        SELECT ot.user_id, ot.api_key_id, ot.client_id, ot.scopes, ot.resource, ot.expires_at, ot.revoked_at
        INTO t
        FROM public.oauth_tokens ot WHERE ot.token_hash = p_key_hash AND ot.kind = 'access';
        IF t.user_id IS NULL THEN
            RETURN;  -- no row: an unknown key
        END IF;
        SELECT ak.id, ak.user_id, ak.revoked_at, ak.scopes, u.disabled_at, u.dek_wrapped, u.key_id
        INTO k
        FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id
        WHERE ak.id = t.api_key_id;
        user_id := t.user_id;
        client_id := t.client_id;
        status := CASE
            WHEN t.revoked_at IS NOT NULL THEN 'revoked_token'
            WHEN t.expires_at <= clock_timestamp() THEN 'expired_token'
            WHEN t.resource IS DISTINCT FROM p_resource THEN 'wrong_resource'
            ELSE sessionvault_oauth_key_status(k.revoked_at, k.disabled_at) END;
        IF status = 'ok' THEN
            dek_wrapped := k.dek_wrapped;
            key_id := k.key_id;
            scopes := sessionvault_oauth_scopes(t.scopes, k.scopes);
        END IF;
        RETURN NEXT;
        RETURN;
    END IF;
    status := sessionvault_oauth_key_status(k.revoked_at, k.disabled_at);
    user_id := k.user_id;
    IF status = 'ok' THEN
        dek_wrapped := k.dek_wrapped;
        key_id := k.key_id;
        scopes := k.scopes;
        -- last_used_at at minute resolution: one write a minute, not one per request.
        IF k.last_used_at IS NULL OR k.last_used_at < clock_timestamp() - interval '1 minute' THEN
            UPDATE public.api_keys SET last_used_at = clock_timestamp() WHERE id = k.id;
        END IF;
    END IF;
    RETURN NEXT;
END;
$$;

ALTER FUNCTION sessionvault_key(bytea,text) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_key(bytea,text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_key(bytea,text) TO sessionvault_app, sessionvault_proofs;
