-- Every handoff can land (issue 37, item 2): an offer to a person is made only to one who could
-- claim it. sessionvault_member_id answered a reader's id (and a disabled person's) as readily
-- as a member's, so an offer to a reader was saved, shown as "open to carol", and could never be
-- claimed (a claim needs write). This function answers the named member's id with their role
-- and whether they are disabled, so the server refuses such an offer at save, saying why.
-- Inside an entered workspace only, as sessionvault_member_id (migration 0013).
GRANT sessionvault_spaces TO CURRENT_USER;
GRANT CREATE ON SCHEMA public TO sessionvault_spaces;

CREATE FUNCTION sessionvault_offer_target(p_name text)
RETURNS TABLE (id uuid, role text, disabled boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT u.id, m.role, u.disabled_at IS NOT NULL
    FROM public.workspace_members m JOIN public.users u ON u.id = m.user_id
    WHERE m.workspace_id = app_current_user_id() AND u.name = p_name AND u.kind = 'person'
$$;

ALTER FUNCTION sessionvault_offer_target(text) OWNER TO sessionvault_spaces;
REVOKE CREATE ON SCHEMA public FROM sessionvault_spaces;
REVOKE ALL ON FUNCTION sessionvault_offer_target(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_offer_target(text) TO sessionvault_app;
REVOKE sessionvault_spaces FROM CURRENT_USER;
