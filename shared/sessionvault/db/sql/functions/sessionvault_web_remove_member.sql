-- Take person p_person out of p_workspace. status: ok | not_found | role | scope | no_person |
-- not_member | last_owner; was: their role before.
CREATE OR REPLACE FUNCTION sessionvault_web_remove_member(p_key_hash bytea, p_workspace text, p_person text)
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

ALTER FUNCTION sessionvault_web_remove_member(bytea,text,text) OWNER TO sessionvault_web_spaces;
REVOKE ALL ON FUNCTION sessionvault_web_remove_member(bytea,text,text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_web_remove_member(bytea,text,text) TO sessionvault_app;
