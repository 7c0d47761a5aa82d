-- Enter workspace p_space for p_access (read | write | own) as the caller the transaction opened
-- as: the membership and its role checked now; the entry recorded (workspace_access); the tenant
-- becomes the workspace (its proof). Answers the role, NULL for no membership, 'denied:<role>'
-- for a role that may not; either refusal clears the tenant, so the transaction sees nothing.
--
-- The workspace's own rate budget (issue 37, item 8): the first entry of a call charges it
-- (p_per_minute > 0: a sliding minute, and p_per_day > 0: a sliding day, counted in
-- rate_counters under the workspace's id, budget 'tool'), beside the member's own budget,
-- which the admission charged. A full window raises SQLSTATE SV429 (detail: window, limit,
-- seconds until it frees) and the call's transaction does nothing; the caller is told which
-- budget it was.
CREATE OR REPLACE FUNCTION sessionvault_enter_workspace(
    p_space uuid, p_access text, p_tool text, p_per_minute integer, p_per_day integer
) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_caller uuid := app_current_user_id();
    v_role text;
    v_now timestamptz := clock_timestamp();
    v_minute integer;
    v_day integer;
    v_minute_free integer;
    v_day_free integer;
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
    PERFORM set_config('app.user_id', sessionvault_mint_proof(p_space), true);
    IF p_per_minute > 0 OR p_per_day > 0 THEN
        PERFORM pg_advisory_xact_lock(hashtextextended(p_space::text || '/tool', 7));
        SELECT w.used_minute, w.used_day, w.minute_free, w.day_free
        INTO v_minute, v_day, v_minute_free, v_day_free
        FROM public.sessionvault_rate_window(p_space, 'tool', v_now) w;
        IF p_per_day > 0 AND v_day >= p_per_day THEN
            RAISE EXCEPTION 'the workspace''s day budget is used up'
                USING ERRCODE = 'SV429', DETAIL = format('day:%s:%s', p_per_day, greatest(1, v_day_free));
        ELSIF p_per_minute > 0 AND v_minute >= p_per_minute THEN
            RAISE EXCEPTION 'the workspace''s minute budget is used up'
                USING ERRCODE = 'SV429', DETAIL = format('minute:%s:%s', p_per_minute, greatest(1, v_minute_free));
        END IF;
        INSERT INTO public.rate_counters AS c (user_id, budget, span, slot, hits)
        VALUES (p_space, 'tool', 'minute', date_bin('5 seconds', v_now, timestamptz 'epoch'), 1),
               (p_space, 'tool', 'day', date_bin('1 hour', v_now, timestamptz 'epoch'), 1)
        ON CONFLICT ON CONSTRAINT rate_counters_pkey DO UPDATE SET hits = c.hits + 1;
    END IF;
    INSERT INTO public.workspace_access (workspace_id, user_id, access, tool)
    VALUES (p_space, v_caller, p_access, left(p_tool, 64));
    -- For the reads this transaction makes: one trail row per session read (sessionvault_note_read).
    PERFORM set_config('app.member', v_caller::text, true);
    PERFORM set_config('app.entry_tool', left(p_tool, 64), true);
    RETURN v_role;
END $$;

ALTER FUNCTION sessionvault_enter_workspace(uuid,text,text,integer,integer) OWNER TO sessionvault_spaces;
REVOKE ALL ON FUNCTION sessionvault_enter_workspace(uuid,text,text,integer,integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_enter_workspace(uuid,text,text,integer,integer) TO sessionvault_app;
