-- A live token by its hash (the refresh grant's first read, and /revoke). A refresh token used
-- before is a reuse: its whole family is revoked and nothing is returned.
CREATE OR REPLACE FUNCTION sessionvault_oauth_token(p_hash bytea)
RETURNS TABLE (kind text, client_id text, scopes text[], resource text, expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    t record;
BEGIN
    SELECT * INTO t FROM public.oauth_tokens WHERE token_hash = p_hash;
    IF t.token_hash IS NULL OR t.revoked_at IS NOT NULL THEN
        RETURN;
    END IF;
    IF t.kind = 'refresh' AND t.used_at IS NOT NULL THEN
        PERFORM sessionvault_oauth_revoke_family(t.family_id);
        RETURN;
    END IF;
    kind := t.kind;
    client_id := t.client_id;
    scopes := t.scopes;
    resource := t.resource;
    expires_at := t.expires_at;
    RETURN NEXT;
END;
$$;

ALTER FUNCTION sessionvault_oauth_token(bytea) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_token(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_token(bytea) TO sessionvault_app;
