-- One row of the workspace's access trail per session content read in it (issue 37, item 8):
-- called from the select list of every statement that returns a session's ciphertext (db/
-- sessions.py RECORD_COLUMNS), once per row. Only inside a workspace entered in this
-- transaction (sessionvault_enter_workspace keeps the member and the tool, transaction-local),
-- and only for a member of the space the row belongs to: a personal space, or a caller who did
-- not enter, notes nothing. The member comes from the entry's setting, checked against the
-- membership: a statement could name another member of the same workspace only by setting it
-- itself, which no statement of the application does (docs/teams.md says what the trail proves).
CREATE OR REPLACE FUNCTION sessionvault_note_read(p_space uuid, p_session uuid) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_member text := current_setting('app.member', true);
BEGIN
    IF coalesce(v_member, '') = '' OR p_space IS NULL THEN
        RETURN false;
    END IF;
    INSERT INTO public.workspace_access (workspace_id, user_id, access, tool, session_id)
    SELECT p_space, m.user_id, 'read', coalesce(current_setting('app.entry_tool', true), ''), p_session
    FROM public.workspace_members m
    WHERE m.workspace_id = p_space AND m.user_id::text = v_member;
    RETURN FOUND;
END $$;

ALTER FUNCTION sessionvault_note_read(uuid,uuid) OWNER TO sessionvault_spaces;
REVOKE ALL ON FUNCTION sessionvault_note_read(uuid,uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_note_read(uuid,uuid) TO sessionvault_app;
