CREATE OR REPLACE FUNCTION sessionvault_admit(
    p_key_hash bytea,
    p_resource text,          -- this server's resource URL (<public url>/mcp): a token must match
    p_budget text,            -- 'tool' (tools/call) or 'protocol' (everything else)
    p_per_minute integer,
    p_per_day integer,        -- 0: no day window for this budget
    p_request_id text,
    p_tool text,
    p_ip_hash bytea,
    p_ua_hash bytea
) RETURNS TABLE (
    status text,              -- ok | unknown_key | revoked_key | disabled_user | revoked_token
                              -- | expired_token | wrong_resource | rate_limited
    user_id uuid,
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
    k record;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT * INTO k FROM sessionvault_enter_key(p_key_hash, p_resource);  -- the tenant: a proof
    RETURN QUERY SELECT * FROM sessionvault_charge(
        coalesce(k.status, 'unknown_key'), k.user_id, k.dek_wrapped, k.key_id, k.scopes, k.client_id,
        p_budget, p_per_minute, p_per_day, p_request_id, p_tool, p_ip_hash, p_ua_hash);
END;
$$;

REVOKE ALL ON FUNCTION sessionvault_admit(bytea,text,text,integer,integer,text,text,bytea,bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_admit(bytea,text,text,integer,integer,text,text,bytea,bytea) TO sessionvault_app;
