-- Revoke every token of a family (reuse of a code or refresh token, /revoke).
CREATE OR REPLACE FUNCTION sessionvault_oauth_revoke_family(p_family uuid) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    UPDATE public.oauth_tokens SET revoked_at = clock_timestamp()
    WHERE family_id = p_family AND revoked_at IS NULL
$$;

ALTER FUNCTION sessionvault_oauth_revoke_family(uuid) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_revoke_family(uuid) FROM PUBLIC;
