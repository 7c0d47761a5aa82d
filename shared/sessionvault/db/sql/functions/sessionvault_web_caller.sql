-- The person whose live key hashes to p_key_hash, the key's scopes, and their role in the
-- workspace named p_workspace (NULL: not a member, or no such workspace; the same answer).
-- Internal: no login role may call it (the web view's definer functions do).
CREATE OR REPLACE FUNCTION sessionvault_web_caller(p_key_hash bytea, p_workspace text,
                                        OUT caller uuid, OUT scopes text[], OUT space uuid, OUT role text)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
BEGIN
    SELECT ak.user_id, ak.scopes INTO caller, scopes
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id
    WHERE ak.key_hash = p_key_hash AND ak.revoked_at IS NULL AND u.disabled_at IS NULL AND u.kind = 'person';
    IF caller IS NULL OR p_workspace IS NULL THEN
        RETURN;
    END IF;
    SELECT w.id, m.role INTO space, role
    FROM public.users w JOIN public.workspace_members m ON m.workspace_id = w.id AND m.user_id = caller
    WHERE w.kind = 'workspace' AND w.name = p_workspace;
END $$;

ALTER FUNCTION sessionvault_web_caller(bytea,text) OWNER TO sessionvault_web_spaces;
REVOKE ALL ON FUNCTION sessionvault_web_caller(bytea,text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_web_caller(bytea,text) TO sessionvault_web;
