-- RFC 7009: revoking either token of a family revokes the family (only the client's own).
CREATE OR REPLACE FUNCTION sessionvault_oauth_revoke(p_hash bytea, p_client_id text) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT sessionvault_oauth_revoke_family(family_id) FROM public.oauth_tokens
    WHERE token_hash = p_hash AND client_id = p_client_id
$$;

ALTER FUNCTION sessionvault_oauth_revoke(bytea,text) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_revoke(bytea,text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_revoke(bytea,text) TO sessionvault_app;
