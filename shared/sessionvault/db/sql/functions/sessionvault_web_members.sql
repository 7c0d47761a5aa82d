-- The members of p_workspace (name, role, when added, whether it is the caller), for an owner
-- of it only: no row for anyone else (a workspace always has an owner, so no row = refused).
CREATE OR REPLACE FUNCTION sessionvault_web_members(p_key_hash bytea, p_workspace text)
RETURNS TABLE (name text, role text, added_at timestamptz, you boolean)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    c record;
BEGIN
    SELECT * INTO c FROM public.sessionvault_web_caller(p_key_hash, p_workspace);
    IF c.role IS DISTINCT FROM 'owner' OR NOT ('read' = ANY (c.scopes)) THEN
        RETURN;
    END IF;
    INSERT INTO public.workspace_access (workspace_id, user_id, access, tool)
    VALUES (c.space, c.caller, 'own', 'web/members');
    RETURN QUERY
        SELECT u.name, m.role, m.added_at, m.user_id = c.caller
        FROM public.workspace_members m JOIN public.users u ON u.id = m.user_id
        WHERE m.workspace_id = c.space
        ORDER BY array_position(ARRAY['owner', 'member', 'reader'], m.role), u.name;
END $$;

ALTER FUNCTION sessionvault_web_members(bytea,text) OWNER TO sessionvault_web_spaces;
REVOKE ALL ON FUNCTION sessionvault_web_members(bytea,text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_web_members(bytea,text) TO sessionvault_app;
