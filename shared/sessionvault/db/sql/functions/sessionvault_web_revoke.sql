-- Revoke key p_key_id, if it is a live key of the same user as the live key p_key_hash and
-- that key has the delete scope. revoked | unknown_key | scope | not_found.
CREATE OR REPLACE FUNCTION sessionvault_web_revoke(p_key_hash bytea, p_key_id uuid)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_user uuid;
    v_scopes text[];
BEGIN
    SELECT c.caller, c.scopes INTO v_user, v_scopes FROM public.sessionvault_web_caller(p_key_hash, NULL) c;
    IF v_user IS NULL THEN
        RETURN 'unknown_key';
    END IF;
    IF NOT ('delete' = ANY (v_scopes)) THEN
        RETURN 'scope';
    END IF;
    UPDATE public.api_keys SET revoked_at = clock_timestamp()
    WHERE id = p_key_id AND user_id = v_user AND revoked_at IS NULL;
    RETURN CASE WHEN FOUND THEN 'revoked' ELSE 'not_found' END;
END;
$$;

ALTER FUNCTION sessionvault_web_revoke(bytea,uuid) OWNER TO sessionvault_web;
REVOKE ALL ON FUNCTION sessionvault_web_revoke(bytea,uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_web_revoke(bytea,uuid) TO sessionvault_app;
