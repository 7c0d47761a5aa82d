CREATE OR REPLACE FUNCTION sessionvault_offer_target(p_name text)
RETURNS TABLE (id uuid, role text, disabled boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT u.id, m.role, u.disabled_at IS NOT NULL
    FROM public.workspace_members m JOIN public.users u ON u.id = m.user_id
    WHERE m.workspace_id = app_current_user_id() AND u.name = p_name AND u.kind = 'person'
$$;

ALTER FUNCTION sessionvault_offer_target(text) OWNER TO sessionvault_spaces;
REVOKE ALL ON FUNCTION sessionvault_offer_target(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_offer_target(text) TO sessionvault_app;
