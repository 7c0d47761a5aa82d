-- Every workspace the caller belongs to, with its role.
CREATE OR REPLACE FUNCTION sessionvault_my_workspaces() RETURNS TABLE (id uuid, name text, role text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT u.id, u.name, m.role
    FROM public.workspace_members m JOIN public.users u ON u.id = m.workspace_id
    WHERE m.user_id = app_current_user_id()
    ORDER BY u.name
$$;

ALTER FUNCTION sessionvault_my_workspaces() OWNER TO sessionvault_spaces;
REVOKE ALL ON FUNCTION sessionvault_my_workspaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_my_workspaces() TO sessionvault_app;
