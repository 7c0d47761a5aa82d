-- What an admission costs, once sessionvault_enter_key has said whose call it is (its row comes
-- in as the p_key_* arguments), and the admission's answer: a refused credential is counted per
-- minute (auth_failures, no user); an accepted one is charged to its budget's sliding windows
-- (minute and day) and gets the request's audit row, or, when a window is full, is refused with
-- the window, its limit and when it frees (its audit row says so). Runs as the serving role,
-- under row security: the tenant is the proof just set. sessionvault_admit and _admit_as answer
-- what it answers.
CREATE OR REPLACE FUNCTION sessionvault_charge(
    p_status text,            -- sessionvault_key's status ('unknown_key' for no row)
    p_user_id uuid,
    p_dek_wrapped bytea,
    p_key_id text,
    p_scopes text[],
    p_client_id text,         -- the OAuth client, for a token
    p_budget text,            -- 'tool' (tools/call) or 'protocol' (everything else)
    p_per_minute integer,
    p_per_day integer,        -- 0: no day window for this budget
    p_request_id text,
    p_tool text,
    p_ip_hash bytea,
    p_ua_hash bytea
) RETURNS TABLE (
    status text,              -- p_status when not ok; else ok | rate_limited
    user_id uuid,             -- these four: the key's, unless it was refused
    dek_wrapped bytea,
    key_id text,
    scopes text[],
    full_window text,         -- minute | day, when rate_limited
    window_limit integer,
    retry_after integer,      -- seconds, when rate_limited
    audit_id bigint
)
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := clock_timestamp();
    v_minute integer;
    v_day integer;
    v_minute_free integer;
    v_day_free integer;
BEGIN
    status := p_status;
    IF status <> 'ok' THEN  -- nothing of the key said to a refused caller
        INSERT INTO auth_failures AS f (slot, reason, hits)
        VALUES (date_trunc('minute', v_now), status, 1)
        ON CONFLICT ON CONSTRAINT auth_failures_pkey DO UPDATE SET hits = f.hits + 1;
        RETURN NEXT;
        RETURN;
    END IF;
    user_id := p_user_id;
    dek_wrapped := p_dek_wrapped;
    key_id := p_key_id;
    scopes := p_scopes;

    PERFORM pg_advisory_xact_lock(hashtextextended(p_user_id::text || '/' || p_budget, 7));
    SELECT w.used_minute, w.used_day, w.minute_free, w.day_free
    INTO v_minute, v_day, v_minute_free, v_day_free
    FROM sessionvault_rate_window(p_user_id, p_budget, v_now) w;

    IF p_per_day > 0 AND v_day >= p_per_day THEN
        status := 'rate_limited';
        full_window := 'day';
        window_limit := p_per_day;
        retry_after := greatest(1, v_day_free);
    ELSIF v_minute >= p_per_minute THEN
        status := 'rate_limited';
        full_window := 'minute';
        window_limit := p_per_minute;
        retry_after := greatest(1, v_minute_free);
    END IF;
    IF status = 'rate_limited' THEN
        INSERT INTO audit_events (user_id, request_id, tool, outcome, error_class, ip_hash, ua_hash,
                                  oauth_client_id)
        VALUES (p_user_id, p_request_id, p_tool, 'error', 'rate_limit', p_ip_hash, p_ua_hash, p_client_id)
        RETURNING id INTO audit_id;
        RETURN NEXT;
        RETURN;
    END IF;

    INSERT INTO rate_counters AS c (user_id, budget, span, slot, hits)
    VALUES (p_user_id, p_budget, 'minute', date_bin('5 seconds', v_now, timestamptz 'epoch'), 1),
           (p_user_id, p_budget, 'day', date_bin('1 hour', v_now, timestamptz 'epoch'), 1)
    ON CONFLICT ON CONSTRAINT rate_counters_pkey DO UPDATE SET hits = c.hits + 1;

    INSERT INTO audit_events (user_id, request_id, tool, outcome, ip_hash, ua_hash, oauth_client_id)
    VALUES (p_user_id, p_request_id, p_tool, 'ok', p_ip_hash, p_ua_hash, p_client_id)
    RETURNING id INTO audit_id;
    RETURN NEXT;
END;
$$;

REVOKE ALL ON FUNCTION sessionvault_charge(text,uuid,bytea,text,text[],text,text,integer,integer,text,text,bytea,bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_charge(text,uuid,bytea,text,text[],text,text,integer,integer,text,text,bytea,bytea) TO sessionvault_app;
