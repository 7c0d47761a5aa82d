-- Workspaces (docs/teams.md): spaces several people share, next to each person's own.
--
-- A workspace is a row of `users` of kind 'workspace', so it is a tenant like a person: its id
-- is the user_id of its sessions, versions, handoffs and usage (the existing policies, quotas
-- and indexes hold as they are); its data key is that row's wrapped key, so re-key and
-- rotation walk it as they walk people and deleting the row shreds it. It can hold no API key
-- and belong to no workspace. Who may use it, and how, is `workspace_members`.
--
-- A member's call enters a workspace through sessionvault_enter_workspace, a definer function
-- queued in the call's own transaction (no extra round trip): it checks the caller's
-- membership and role at the moment of the statement and only then makes the workspace the
-- transaction's tenant; otherwise it clears the tenant, so the statements after it see and
-- write nothing. Nothing about membership is cached anywhere: a removed member's next call,
-- warm instance or not, finds nothing, exactly as for a workspace that does not exist.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sessionvault_spaces') THEN
        CREATE ROLE sessionvault_spaces NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END $$;
GRANT USAGE ON SCHEMA public TO sessionvault_spaces;

ALTER TABLE users ADD COLUMN kind text NOT NULL DEFAULT 'person'
    CHECK (kind IN ('person', 'workspace'));

-- The identity plane, like users: no RLS, and no grant to the serving role at all.
CREATE TABLE workspace_members (
    workspace_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role         text NOT NULL CHECK (role IN ('owner', 'member', 'reader')),
    added_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_user ON workspace_members (user_id);
GRANT SELECT, INSERT, UPDATE, DELETE ON workspace_members TO sessionvault_admin;
GRANT SELECT ON workspace_members TO sessionvault_spaces, sessionvault_maint;
GRANT SELECT (id, name, kind, dek_wrapped, key_id, disabled_at) ON users TO sessionvault_spaces;
GRANT SELECT (kind) ON users TO sessionvault_maint;

-- Who entered which workspace, when, for what (ids only, never content): written by the
-- definer function on every entry, read by the operator (admin role).
CREATE TABLE workspace_access (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    user_id      uuid NOT NULL,
    access       text NOT NULL,
    tool         text NOT NULL DEFAULT '',
    at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX workspace_access_workspace_at ON workspace_access (workspace_id, at);
CREATE INDEX workspace_access_at ON workspace_access (at);
GRANT SELECT, DELETE ON workspace_access TO sessionvault_admin, sessionvault_maint;
GRANT INSERT ON workspace_access TO sessionvault_spaces;

-- Kinds hold where rows are made: keys belong to people, memberships join a person to a workspace.
CREATE FUNCTION sessionvault_check_kinds() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, public AS $$
BEGIN
    IF TG_TABLE_NAME = 'api_keys' THEN
        IF (SELECT kind FROM users WHERE id = NEW.user_id) <> 'person' THEN
            RAISE EXCEPTION 'a workspace has no API keys' USING ERRCODE = 'check_violation';
        END IF;
    ELSIF (SELECT kind FROM users WHERE id = NEW.workspace_id) <> 'workspace'
       OR (SELECT kind FROM users WHERE id = NEW.user_id) <> 'person' THEN
        RAISE EXCEPTION 'a membership joins a person to a workspace' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER api_keys_person_only BEFORE INSERT OR UPDATE OF user_id ON api_keys
    FOR EACH ROW EXECUTE FUNCTION sessionvault_check_kinds();
CREATE TRIGGER workspace_members_kinds BEFORE INSERT OR UPDATE ON workspace_members
    FOR EACH ROW EXECUTE FUNCTION sessionvault_check_kinds();

-- An offer to one person (a member), and who offered it (both NULL in a personal space).
ALTER TABLE handoffs ADD COLUMN to_user uuid, ADD COLUMN from_user uuid;

-- The definer functions read open offers across the caller's workspaces.
CREATE POLICY handoffs_spaces ON handoffs FOR SELECT TO sessionvault_spaces USING (true);
GRANT SELECT ON handoffs TO sessionvault_spaces;

-- Enter workspace p_space for p_access ('read', 'write' or 'own'): as the caller (the tenant
-- the admission set), if a member with a role that allows it. Returns the role; NULL (not a
-- member, or no such workspace: the same answer) or 'denied:<role>' clears the tenant instead.
CREATE FUNCTION sessionvault_enter_workspace(p_space uuid, p_access text, p_tool text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_caller uuid := app_current_user_id();
    v_role text;
BEGIN
    SELECT m.role INTO v_role
    FROM public.workspace_members m JOIN public.users u ON u.id = m.user_id
    WHERE m.workspace_id = p_space AND m.user_id = v_caller AND u.disabled_at IS NULL AND u.kind = 'person';
    IF v_role IS NULL
       OR (p_access = 'write' AND v_role = 'reader')
       OR (p_access = 'own' AND v_role <> 'owner') THEN
        PERFORM set_config('app.user_id', '', true);
        RETURN CASE WHEN v_role IS NULL THEN NULL ELSE 'denied:' || v_role END;
    END IF;
    INSERT INTO public.workspace_access (workspace_id, user_id, access, tool)
    VALUES (p_space, v_caller, p_access, left(p_tool, 64));
    PERFORM set_config('app.user_id', p_space::text, true);
    RETURN v_role;
END $$;

-- The caller's workspace named p_name (id, wrapped key, role); no row for a non-member.
CREATE FUNCTION sessionvault_workspace(p_name text)
RETURNS TABLE (id uuid, dek_wrapped bytea, key_id text, role text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT u.id, u.dek_wrapped, u.key_id, m.role
    FROM public.users u JOIN public.workspace_members m ON m.workspace_id = u.id
    WHERE u.kind = 'workspace' AND u.name = p_name AND m.user_id = app_current_user_id()
$$;

-- Every workspace the caller belongs to, with its role.
CREATE FUNCTION sessionvault_my_workspaces() RETURNS TABLE (id uuid, name text, role text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT u.id, u.name, m.role
    FROM public.workspace_members m JOIN public.users u ON u.id = m.workspace_id
    WHERE m.user_id = app_current_user_id()
    ORDER BY u.name
$$;

-- Inside an entered workspace: the id of its member named p_name (an offer's person), or NULL.
CREATE FUNCTION sessionvault_member_id(p_name text) RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT u.id FROM public.workspace_members m JOIN public.users u ON u.id = m.user_id
    WHERE m.workspace_id = app_current_user_id() AND u.name = p_name AND u.kind = 'person'
$$;

-- Inside an entered workspace (or for oneself): the name of person p_user, or NULL.
CREATE FUNCTION sessionvault_member_name(p_user uuid) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT u.name FROM public.users u
    WHERE u.id = p_user AND u.kind = 'person'
      AND (p_user = app_current_user_id() OR EXISTS (
           SELECT 1 FROM public.workspace_members m
           WHERE m.workspace_id = app_current_user_id() AND m.user_id = p_user))
$$;

-- The newest open offer the caller may claim in any of its workspaces (as owner or member):
-- offered to anyone or to this person, to any client or to p_client. Which workspace, and when.
CREATE FUNCTION sessionvault_newest_offer_elsewhere(p_repo text, p_client text)
RETURNS TABLE (space uuid, name text, offered_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT h.user_id, w.name, h.offered_at
    FROM public.handoffs h
    JOIN public.workspace_members m
      ON m.workspace_id = h.user_id AND m.user_id = app_current_user_id() AND m.role IN ('owner', 'member')
    JOIN public.users w ON w.id = h.user_id
    WHERE (p_repo = '' OR h.repo = p_repo)
      AND (h.to_client = '' OR h.to_client = p_client)
      AND (h.to_user IS NULL OR h.to_user = app_current_user_id())
      AND h.accepted_at IS NULL AND h.superseded_at IS NULL AND h.expires_at > clock_timestamp()
    ORDER BY h.offered_at DESC
    LIMIT 1
$$;

GRANT sessionvault_spaces TO CURRENT_USER;
GRANT CREATE ON SCHEMA public TO sessionvault_spaces;
ALTER FUNCTION sessionvault_enter_workspace(uuid, text, text) OWNER TO sessionvault_spaces;
ALTER FUNCTION sessionvault_workspace(text) OWNER TO sessionvault_spaces;
ALTER FUNCTION sessionvault_my_workspaces() OWNER TO sessionvault_spaces;
ALTER FUNCTION sessionvault_member_id(text) OWNER TO sessionvault_spaces;
ALTER FUNCTION sessionvault_member_name(uuid) OWNER TO sessionvault_spaces;
ALTER FUNCTION sessionvault_newest_offer_elsewhere(text, text) OWNER TO sessionvault_spaces;
REVOKE CREATE ON SCHEMA public FROM sessionvault_spaces;
REVOKE ALL ON FUNCTION
    sessionvault_enter_workspace(uuid, text, text),
    sessionvault_workspace(text),
    sessionvault_my_workspaces(),
    sessionvault_member_id(text),
    sessionvault_member_name(uuid),
    sessionvault_newest_offer_elsewhere(text, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    sessionvault_enter_workspace(uuid, text, text),
    sessionvault_workspace(text),
    sessionvault_my_workspaces(),
    sessionvault_member_id(text),
    sessionvault_member_name(uuid),
    sessionvault_newest_offer_elsewhere(text, text)
    TO sessionvault_app;
GRANT EXECUTE ON FUNCTION sessionvault_member_name(uuid) TO sessionvault_admin, sessionvault_maint;
REVOKE sessionvault_spaces FROM CURRENT_USER;
