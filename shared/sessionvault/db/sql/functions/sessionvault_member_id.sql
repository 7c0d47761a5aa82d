-- Inside an entered workspace: the id of its member named p_name (an offer's person), or NULL.
CREATE OR REPLACE FUNCTION sessionvault_member_id(p_name text) RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT u.id FROM public.workspace_members m JOIN public.users u ON u.id = m.user_id
    WHERE m.workspace_id = app_current_user_id() AND u.name = p_name AND u.kind = 'person'
$$;

ALTER FUNCTION sessionvault_member_id(text) OWNER TO sessionvault_spaces;
REVOKE ALL ON FUNCTION sessionvault_member_id(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_member_id(text) TO sessionvault_app;
