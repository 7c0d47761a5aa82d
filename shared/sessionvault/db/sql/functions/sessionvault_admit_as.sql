-- A riding admission checks every scope the call needs, not only the tool's main one
-- (issue 27, item 6): `load_session` with accept=true claims a handoff, which needs write as
-- well as read. p_scope is now a comma-separated list ('read' or 'read,write'), every one of
-- which the key must still allow at the moment of the statement; otherwise the expected
-- principal is stale and nothing runs.
CREATE OR REPLACE FUNCTION sessionvault_admit_as(
    p_user_id uuid,
    p_dek_wrapped bytea,
    p_scope text,
    p_key_hash bytea,
    p_resource text,
    p_budget text,
    p_per_minute integer,
    p_per_day integer,
    p_request_id text,
    p_tool text,
    p_ip_hash bytea,
    p_ua_hash bytea
) RETURNS TABLE (
    status text,              -- as sessionvault_admit's, or 'stale'
    user_id uuid,
    dek_wrapped bytea,
    key_id text,
    scopes text[],
    full_window text,
    window_limit integer,
    retry_after integer,
    audit_id bigint
)
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    k record;
    c record;
    v_sync text := current_setting('synchronous_commit');
BEGIN
    PERFORM set_config('lock_timeout', '2s', true);
    SELECT * INTO k FROM sessionvault_enter_key(p_key_hash, p_resource);  -- the tenant: a proof
    IF k.status = 'ok' AND (k.user_id <> p_user_id OR k.dek_wrapped <> p_dek_wrapped
                            OR NOT coalesce(string_to_array(p_scope, ',') <@ k.scopes, false)) THEN
        PERFORM set_config('app.user_id', '', true);
        status := 'stale';
        RETURN NEXT;
        RETURN;
    END IF;

    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT * INTO c FROM sessionvault_charge(
        coalesce(k.status, 'unknown_key'), k.user_id, k.dek_wrapped, k.key_id, k.scopes, k.client_id,
        p_budget, p_per_minute, p_per_day, p_request_id, p_tool, p_ip_hash, p_ua_hash);
    PERFORM set_config('synchronous_commit', v_sync, true);
    IF c.status <> 'ok' THEN
        PERFORM set_config('app.user_id', '', true);  -- a rate-limited call set it for its audit row
    END IF;
    RETURN QUERY SELECT c.status, c.user_id, c.dek_wrapped, c.key_id, c.scopes, c.full_window,
                        c.window_limit, c.retry_after, c.audit_id;
END;
$$;

REVOKE ALL ON FUNCTION sessionvault_admit_as(uuid,bytea,text,bytea,text,text,integer,integer,text,text,bytea,bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_admit_as(uuid,bytea,text,bytea,text,text,integer,integer,text,text,bytea,bytea) TO sessionvault_app;
