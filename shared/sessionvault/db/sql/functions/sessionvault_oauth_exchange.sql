-- Code -> tokens. Everything is checked again here, whatever the caller checked: unused,
-- unexpired, same client, same redirect URI, same resource, the PKCE S256 verifier, and the
-- approving key still valid. status: ok | invalid_grant.
CREATE OR REPLACE FUNCTION sessionvault_oauth_exchange(
    p_code_hash bytea, p_client_id text, p_redirect_uri text, p_verifier text, p_resource text,
    p_access_hash bytea, p_refresh_hash bytea, p_access_ttl_s integer, p_refresh_ttl_s integer
) RETURNS TABLE (status text, scopes text[])
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    c record;
    k record;
BEGIN
    status := 'invalid_grant';
    SELECT * INTO c FROM public.oauth_codes WHERE code_hash = p_code_hash FOR UPDATE;
    IF c.code_hash IS NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    IF c.used_at IS NOT NULL THEN
        PERFORM sessionvault_oauth_revoke_family(c.family_id);
        RETURN NEXT;
        RETURN;
    END IF;
    IF c.expires_at <= clock_timestamp() OR c.client_id <> p_client_id
       OR c.redirect_uri <> p_redirect_uri OR c.resource <> p_resource
       OR p_verifier IS NULL OR length(p_verifier) NOT BETWEEN 43 AND 128
       OR rtrim(translate(encode(sha256(convert_to(p_verifier, 'UTF8')), 'base64'), '+/', '-_'), '=')
          <> c.code_challenge THEN
        RETURN NEXT;
        RETURN;
    END IF;
    -- The code is spent whatever follows: a second attempt is a reuse.
    UPDATE public.oauth_codes SET used_at = clock_timestamp() WHERE code_hash = p_code_hash;
    SELECT ak.scopes, sessionvault_oauth_key_status(ak.revoked_at, u.disabled_at) AS st INTO k
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id WHERE ak.id = c.api_key_id;
    IF k.st IS DISTINCT FROM 'ok' THEN
        RETURN NEXT;
        RETURN;
    END IF;
    scopes := sessionvault_oauth_scopes(c.scopes, k.scopes);
    PERFORM sessionvault_oauth_mint(c.family_id, c.user_id, c.api_key_id, c.client_id, scopes,
                                    c.resource, p_access_hash, p_refresh_hash, p_access_ttl_s, p_refresh_ttl_s);
    status := 'ok';
    RETURN NEXT;
END;
$$;

ALTER FUNCTION sessionvault_oauth_exchange(bytea,text,text,text,text,bytea,bytea,integer,integer) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_exchange(bytea,text,text,text,text,bytea,bytea,integer,integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_exchange(bytea,text,text,text,text,bytea,bytea,integer,integer) TO sessionvault_app;
