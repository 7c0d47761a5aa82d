-- Mint an access and a refresh token of `p_family` (hashes made by the caller from fresh random
-- tokens it alone sees).
CREATE OR REPLACE FUNCTION sessionvault_oauth_mint(
    p_family uuid, p_user uuid, p_key uuid, p_client text, p_scopes text[], p_resource text,
    p_access_hash bytea, p_refresh_hash bytea, p_access_ttl_s integer, p_refresh_ttl_s integer
) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    INSERT INTO public.oauth_tokens
        (token_hash, kind, family_id, user_id, api_key_id, client_id, scopes, resource, expires_at)
    VALUES
        (p_access_hash, 'access', p_family, p_user, p_key, p_client, p_scopes, p_resource,
         clock_timestamp() + make_interval(secs => p_access_ttl_s)),
        (p_refresh_hash, 'refresh', p_family, p_user, p_key, p_client, p_scopes, p_resource,
         clock_timestamp() + make_interval(secs => p_refresh_ttl_s))
$$;

ALTER FUNCTION sessionvault_oauth_mint(uuid,uuid,uuid,text,text[],text,bytea,bytea,integer,integer) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_mint(uuid,uuid,uuid,text,text[],text,bytea,bytea,integer,integer) FROM PUBLIC;
