CREATE OR REPLACE FUNCTION sessionvault_enter_workspace(p_space uuid, p_access text, p_tool text) RETURNS text
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
    PERFORM set_config('app.user_id', sessionvault_mint_proof(p_space), true);
    RETURN v_role;
END $$;

ALTER FUNCTION sessionvault_enter_workspace(uuid,text,text) OWNER TO sessionvault_spaces;
REVOKE ALL ON FUNCTION sessionvault_enter_workspace(uuid,text,text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_enter_workspace(uuid,text,text) TO sessionvault_app;
