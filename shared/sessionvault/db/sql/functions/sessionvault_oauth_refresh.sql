-- Refresh: the old refresh token is spent, a new pair of the same family minted (rotation).
-- Used twice (a race included: the row is locked), the family is revoked. status: ok | invalid_grant.
CREATE OR REPLACE FUNCTION sessionvault_oauth_refresh(
    p_hash bytea, p_client_id text, p_scopes text[], p_resource text,
    p_access_hash bytea, p_refresh_hash bytea, p_access_ttl_s integer, p_refresh_ttl_s integer
) RETURNS TABLE (status text, scopes text[])
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    t record;
    k record;
BEGIN
    status := 'invalid_grant';
    SELECT * INTO t FROM public.oauth_tokens WHERE token_hash = p_hash AND kind = 'refresh' FOR UPDATE;
    IF t.token_hash IS NULL OR t.revoked_at IS NOT NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    IF t.used_at IS NOT NULL THEN
        PERFORM sessionvault_oauth_revoke_family(t.family_id);
        RETURN NEXT;
        RETURN;
    END IF;
    IF t.expires_at <= clock_timestamp() OR t.client_id <> p_client_id OR t.resource <> p_resource
       OR NOT (p_scopes <@ t.scopes) THEN
        RETURN NEXT;
        RETURN;
    END IF;
    UPDATE public.oauth_tokens SET used_at = clock_timestamp() WHERE token_hash = p_hash;
    SELECT ak.scopes, sessionvault_oauth_key_status(ak.revoked_at, u.disabled_at) AS st INTO k
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id WHERE ak.id = t.api_key_id;
    IF k.st IS DISTINCT FROM 'ok' THEN
        RETURN NEXT;
        RETURN;
    END IF;
    scopes := sessionvault_oauth_scopes(
        CASE WHEN cardinality(p_scopes) = 0 THEN t.scopes ELSE p_scopes END, k.scopes);
    PERFORM sessionvault_oauth_mint(t.family_id, t.user_id, t.api_key_id, t.client_id, scopes,
                                    t.resource, p_access_hash, p_refresh_hash, p_access_ttl_s, p_refresh_ttl_s);
    status := 'ok';
    RETURN NEXT;
END;
$$;

ALTER FUNCTION sessionvault_oauth_refresh(bytea,text,text[],text,bytea,bytea,integer,integer) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_refresh(bytea,text,text[],text,bytea,bytea,integer,integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_refresh(bytea,text,text[],text,bytea,bytea,integer,integer) TO sessionvault_app;
