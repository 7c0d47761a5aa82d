-- Inside an entered workspace (or for oneself): the name of person p_user, or NULL. A person
-- who offered, was offered or claimed a handoff in the workspace keeps their name on it after
-- leaving (issue 37): the record of who handed work to whom outlives the membership.
CREATE OR REPLACE FUNCTION sessionvault_member_name(p_user uuid) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT u.name FROM public.users u
    WHERE u.id = p_user AND u.kind = 'person'
      AND (p_user = app_current_user_id()
           OR EXISTS (SELECT 1 FROM public.workspace_members m
                      WHERE m.workspace_id = app_current_user_id() AND m.user_id = p_user)
           OR EXISTS (SELECT 1 FROM public.handoffs h
                      WHERE h.user_id = app_current_user_id() AND p_user IN (h.from_user, h.to_user, h.accepted_user)))
$$;

ALTER FUNCTION sessionvault_member_name(uuid) OWNER TO sessionvault_spaces;
REVOKE ALL ON FUNCTION sessionvault_member_name(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_member_name(uuid) TO sessionvault_admin, sessionvault_app, sessionvault_maint;
