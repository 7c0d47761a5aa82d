-- The caller's workspace named p_name (id, wrapped key, role); no row for a non-member.
CREATE OR REPLACE FUNCTION sessionvault_workspace(p_name text)
RETURNS TABLE (id uuid, dek_wrapped bytea, key_id text, role text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT u.id, u.dek_wrapped, u.key_id, m.role
    FROM public.users u JOIN public.workspace_members m ON m.workspace_id = u.id
    WHERE u.kind = 'workspace' AND u.name = p_name AND m.user_id = app_current_user_id()
$$;

ALTER FUNCTION sessionvault_workspace(text) OWNER TO sessionvault_spaces;
REVOKE ALL ON FUNCTION sessionvault_workspace(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_workspace(text) TO sessionvault_app;
