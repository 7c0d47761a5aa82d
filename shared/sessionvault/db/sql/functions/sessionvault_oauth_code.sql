-- A code as the token endpoint first reads it. A code already used is refused, and every token
-- it produced is revoked (OAuth 2.1 section 4.1.3: it may have been stolen).
CREATE OR REPLACE FUNCTION sessionvault_oauth_code(p_code_hash bytea)
RETURNS TABLE (client_id text, redirect_uri text, code_challenge text, scopes text[], resource text,
               expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    c record;
BEGIN
    SELECT * INTO c FROM public.oauth_codes WHERE code_hash = p_code_hash;
    IF c.code_hash IS NULL THEN
        RETURN;
    END IF;
    IF c.used_at IS NOT NULL THEN
        PERFORM sessionvault_oauth_revoke_family(c.family_id);
        RETURN;
    END IF;
    client_id := c.client_id;
    redirect_uri := c.redirect_uri;
    code_challenge := c.code_challenge;
    scopes := c.scopes;
    resource := c.resource;
    expires_at := c.expires_at;
    RETURN NEXT;
END;
$$;

ALTER FUNCTION sessionvault_oauth_code(bytea) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_code(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_code(bytea) TO sessionvault_app;
