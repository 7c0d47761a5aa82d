-- Every key of the user whose live key hashes to p_key_hash (none for any other hash): never
-- the hash itself. `current` marks the key asked with.
CREATE OR REPLACE FUNCTION sessionvault_web_keys(p_key_hash bytea)
RETURNS TABLE (id uuid, prefix text, label text, scopes text[], created_at timestamptz,
               last_used_at timestamptz, revoked_at timestamptz, current boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    v_user uuid;
BEGIN
    SELECT ak.user_id INTO v_user
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id
    WHERE ak.key_hash = p_key_hash AND ak.revoked_at IS NULL AND u.disabled_at IS NULL;
    IF v_user IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT k.id, k.key_prefix, k.label, k.scopes, k.created_at, k.last_used_at, k.revoked_at,
               k.key_hash = p_key_hash
        FROM public.api_keys k
        WHERE k.user_id = v_user
        ORDER BY k.created_at, k.id;
END;
$$;

ALTER FUNCTION sessionvault_web_keys(bytea) OWNER TO sessionvault_web;
REVOKE ALL ON FUNCTION sessionvault_web_keys(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_web_keys(bytea) TO sessionvault_app;
