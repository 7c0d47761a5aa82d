-- Workspaces in the web view (docs/web.md, docs/teams.md): an owner sees and changes the
-- members of their workspace, and a person sees the open handoffs offered to them across
-- their spaces.
--
-- Who asks is never a form field and never a setting the serving role could choose
-- (app.user_id): every function takes the signed-in key's SHA-256, as 0010's key functions do,
-- and answers only for the person that live key belongs to. A change is made only when that
-- person is, at that moment, an owner of the workspace named, and the key has the delete scope
-- (a change of who may read a workspace is as irreversible as a revoke: what a new member read
-- stays read); the last owner is neither removed nor demoted, checked with the workspace's
-- membership rows locked. Every change leaves a workspace_access row (access 'own').
--
-- The functions belong to a role of their own, sessionvault_web_spaces (NOLOGIN, no
-- BYPASSRLS), which may read the key columns needed to know the caller, people's and
-- workspaces' names, the open offers (handoffs) and the sessions' names they offer, and write
-- memberships; nothing else. The serving role still reads no membership, key or user row.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sessionvault_web_spaces') THEN
        CREATE ROLE sessionvault_web_spaces NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END $$;
GRANT USAGE ON SCHEMA public TO sessionvault_web_spaces;
GRANT SELECT (user_id, key_hash, scopes, revoked_at) ON api_keys TO sessionvault_web_spaces;
GRANT SELECT (id, name, kind, disabled_at) ON users TO sessionvault_web_spaces;
GRANT SELECT, INSERT, UPDATE, DELETE ON workspace_members TO sessionvault_web_spaces;
GRANT INSERT ON workspace_access TO sessionvault_web_spaces;
-- The offers list reads past RLS (a person's own space and their workspaces, in one query):
-- the function below is the wall, as 0013's functions are for sessionvault_spaces.
GRANT SELECT ON handoffs TO sessionvault_web_spaces;
GRANT SELECT (id, user_id, name) ON sessions TO sessionvault_web_spaces;
CREATE POLICY handoffs_web_spaces ON handoffs FOR SELECT TO sessionvault_web_spaces USING (true);
CREATE POLICY sessions_web_spaces ON sessions FOR SELECT TO sessionvault_web_spaces USING (true);

-- The person whose live key hashes to p_key_hash, the key's scopes, and their role in the
-- workspace named p_workspace (NULL: not a member, or no such workspace; the same answer).
-- Internal: no login role may call it.
CREATE FUNCTION sessionvault_web_caller(p_key_hash bytea, p_workspace text,
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

-- The members of p_workspace (name, role, when added, whether it is the caller), for an owner
-- of it only: no row for anyone else (a workspace always has an owner, so no row = refused).
CREATE FUNCTION sessionvault_web_members(p_key_hash bytea, p_workspace text)
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

-- Give person p_person role p_role in p_workspace: p_add adds a person not yet a member
-- ('already' if they are one), otherwise changes a member's role ('not_member' if not one).
-- status: ok | not_found (no such workspace of the caller's) | role (the caller is not an
-- owner) | scope (the key lacks delete) | bad_role | no_person | already | not_member |
-- last_owner; was: the person's role before.
CREATE FUNCTION sessionvault_web_set_member(p_key_hash bytea, p_workspace text, p_person text,
                                            p_role text, p_add boolean)
RETURNS TABLE (status text, was text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    c record;
    v_person uuid;
    v_was text;
    v_owners integer;
BEGIN
    SELECT * INTO c FROM public.sessionvault_web_caller(p_key_hash, p_workspace);
    IF c.role IS NULL THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::text; RETURN;
    ELSIF c.role <> 'owner' THEN
        RETURN QUERY SELECT 'role'::text, c.role; RETURN;
    ELSIF NOT ('delete' = ANY (c.scopes)) THEN
        RETURN QUERY SELECT 'scope'::text, NULL::text; RETURN;
    ELSIF p_role IS NULL OR p_role NOT IN ('owner', 'member', 'reader') THEN
        RETURN QUERY SELECT 'bad_role'::text, NULL::text; RETURN;
    END IF;
    -- One change of this workspace's members at a time: two owners demoting each other at
    -- once must not leave it without one.
    PERFORM 1 FROM public.workspace_members WHERE workspace_id = c.space FOR UPDATE;
    IF (SELECT m.role FROM public.workspace_members m WHERE m.workspace_id = c.space AND m.user_id = c.caller)
       IS DISTINCT FROM 'owner' THEN
        RETURN QUERY SELECT 'role'::text, NULL::text; RETURN;  -- demoted or removed meanwhile
    END IF;
    SELECT u.id INTO v_person FROM public.users u WHERE u.name = p_person AND u.kind = 'person';
    IF v_person IS NULL THEN
        RETURN QUERY SELECT 'no_person'::text, NULL::text; RETURN;
    END IF;
    SELECT m.role INTO v_was FROM public.workspace_members m
    WHERE m.workspace_id = c.space AND m.user_id = v_person;
    IF p_add AND v_was IS NOT NULL THEN
        RETURN QUERY SELECT 'already'::text, v_was; RETURN;
    ELSIF NOT p_add AND v_was IS NULL THEN
        RETURN QUERY SELECT 'not_member'::text, NULL::text; RETURN;
    END IF;
    IF v_was = 'owner' AND p_role <> 'owner' THEN
        SELECT count(*) INTO v_owners FROM public.workspace_members m
        WHERE m.workspace_id = c.space AND m.role = 'owner';
        IF v_owners <= 1 THEN
            RETURN QUERY SELECT 'last_owner'::text, v_was; RETURN;
        END IF;
    END IF;
    INSERT INTO public.workspace_members (workspace_id, user_id, role) VALUES (c.space, v_person, p_role)
    ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = EXCLUDED.role;
    INSERT INTO public.workspace_access (workspace_id, user_id, access, tool)
    VALUES (c.space, c.caller, 'own', CASE WHEN p_add THEN 'web/members.add' ELSE 'web/members.role' END);
    RETURN QUERY SELECT 'ok'::text, v_was;
END $$;

-- Take person p_person out of p_workspace. status: ok | not_found | role | scope | no_person |
-- not_member | last_owner; was: their role before.
CREATE FUNCTION sessionvault_web_remove_member(p_key_hash bytea, p_workspace text, p_person text)
RETURNS TABLE (status text, was text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    c record;
    v_person uuid;
    v_was text;
    v_owners integer;
BEGIN
    SELECT * INTO c FROM public.sessionvault_web_caller(p_key_hash, p_workspace);
    IF c.role IS NULL THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::text; RETURN;
    ELSIF c.role <> 'owner' THEN
        RETURN QUERY SELECT 'role'::text, c.role; RETURN;
    ELSIF NOT ('delete' = ANY (c.scopes)) THEN
        RETURN QUERY SELECT 'scope'::text, NULL::text; RETURN;
    END IF;
    PERFORM 1 FROM public.workspace_members WHERE workspace_id = c.space FOR UPDATE;
    IF (SELECT m.role FROM public.workspace_members m WHERE m.workspace_id = c.space AND m.user_id = c.caller)
       IS DISTINCT FROM 'owner' THEN
        RETURN QUERY SELECT 'role'::text, NULL::text; RETURN;
    END IF;
    SELECT u.id INTO v_person FROM public.users u WHERE u.name = p_person AND u.kind = 'person';
    IF v_person IS NULL THEN
        RETURN QUERY SELECT 'no_person'::text, NULL::text; RETURN;
    END IF;
    SELECT m.role INTO v_was FROM public.workspace_members m
    WHERE m.workspace_id = c.space AND m.user_id = v_person;
    IF v_was IS NULL THEN
        RETURN QUERY SELECT 'not_member'::text, NULL::text; RETURN;
    END IF;
    IF v_was = 'owner' THEN
        SELECT count(*) INTO v_owners FROM public.workspace_members m
        WHERE m.workspace_id = c.space AND m.role = 'owner';
        IF v_owners <= 1 THEN
            RETURN QUERY SELECT 'last_owner'::text, v_was; RETURN;
        END IF;
    END IF;
    DELETE FROM public.workspace_members WHERE workspace_id = c.space AND user_id = v_person;
    INSERT INTO public.workspace_access (workspace_id, user_id, access, tool)
    VALUES (c.space, c.caller, 'own', 'web/members.remove');
    RETURN QUERY SELECT 'ok'::text, v_was;
END $$;

-- The open handoffs offered to the holder of the live key p_key_hash, newest first, across
-- their spaces: every open offer of their personal space, and in each workspace where they
-- are an owner or member (a reader cannot claim), those offered to anyone or to them. The
-- workspace's name ('' = personal), the session's name, who offered it. No content.
CREATE FUNCTION sessionvault_web_offers(p_key_hash bytea, p_limit integer)
RETURNS TABLE (workspace text, name text, repo text, version integer, offered_at timestamptz,
               expires_at timestamptz, to_client text, offered_by text, to_you boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    c record;
BEGIN
    SELECT * INTO c FROM public.sessionvault_web_caller(p_key_hash, NULL);
    IF c.caller IS NULL OR NOT ('read' = ANY (c.scopes)) THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT CASE WHEN h.user_id = c.caller THEN '' ELSE w.name END, s.name, h.repo, h.version,
               h.offered_at, h.expires_at, h.to_client, f.name, h.to_user IS NOT NULL
        FROM public.handoffs h
        JOIN public.sessions s ON s.id = h.session_id
        JOIN public.users w ON w.id = h.user_id
        LEFT JOIN public.users f ON f.id = h.from_user
        WHERE h.accepted_at IS NULL AND h.superseded_at IS NULL AND h.expires_at > clock_timestamp()
          AND (h.user_id = c.caller
               OR ((h.to_user IS NULL OR h.to_user = c.caller) AND EXISTS (
                   SELECT 1 FROM public.workspace_members m
                   WHERE m.workspace_id = h.user_id AND m.user_id = c.caller
                     AND m.role IN ('owner', 'member'))))
        ORDER BY h.offered_at DESC
        LIMIT greatest(least(p_limit, 500), 0);
END $$;

-- Ownership as in 0010 and 0013: the definer functions belong to their NOLOGIN role; the
-- membership the owner takes to hand them over is given back last.
GRANT sessionvault_web_spaces TO CURRENT_USER;
GRANT CREATE ON SCHEMA public TO sessionvault_web_spaces;
ALTER FUNCTION sessionvault_web_caller(bytea, text) OWNER TO sessionvault_web_spaces;
ALTER FUNCTION sessionvault_web_members(bytea, text) OWNER TO sessionvault_web_spaces;
ALTER FUNCTION sessionvault_web_set_member(bytea, text, text, text, boolean) OWNER TO sessionvault_web_spaces;
ALTER FUNCTION sessionvault_web_remove_member(bytea, text, text) OWNER TO sessionvault_web_spaces;
ALTER FUNCTION sessionvault_web_offers(bytea, integer) OWNER TO sessionvault_web_spaces;
REVOKE CREATE ON SCHEMA public FROM sessionvault_web_spaces;
REVOKE ALL ON FUNCTION
    sessionvault_web_caller(bytea, text),
    sessionvault_web_members(bytea, text),
    sessionvault_web_set_member(bytea, text, text, text, boolean),
    sessionvault_web_remove_member(bytea, text, text),
    sessionvault_web_offers(bytea, integer)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    sessionvault_web_members(bytea, text),
    sessionvault_web_set_member(bytea, text, text, text, boolean),
    sessionvault_web_remove_member(bytea, text, text),
    sessionvault_web_offers(bytea, integer)
    TO sessionvault_app;
REVOKE sessionvault_web_spaces FROM CURRENT_USER;
