-- Give person p_person role p_role in p_workspace: p_add adds a person not yet a member
-- ('already' if they are one), otherwise changes a member's role ('not_member' if not one).
-- status: ok | not_found (no such workspace of the caller's) | role (the caller is not an
-- owner) | scope (the key lacks delete) | bad_role | no_person | already | not_member |
-- last_owner; was: the person's role before.
CREATE OR REPLACE FUNCTION sessionvault_web_set_member(p_key_hash bytea, p_workspace text, p_person text,
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

ALTER FUNCTION sessionvault_web_set_member(bytea,text,text,text,boolean) OWNER TO sessionvault_web_spaces;
REVOKE ALL ON FUNCTION sessionvault_web_set_member(bytea,text,text,text,boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_web_set_member(bytea,text,text,text,boolean) TO sessionvault_app;
