-- Admission in one statement: look up the key, set the tenant, apply the rate limit and write
-- the audit row in a single round trip (sessionvault_admit). Rate limits become counters per
-- user, budget and time slot, so a check costs the same whatever the day's volume.

-- Sliding windows as fixed slots: the minute window sums the 12 five-second slots of the last
-- minute, the day window the 24 one-hour slots of the last day: at most 36 rows per check.
CREATE TABLE rate_counters (
    user_id uuid NOT NULL,
    budget  text NOT NULL CHECK (budget IN ('tool', 'protocol')),
    span    text NOT NULL CHECK (span IN ('minute', 'day')),
    slot    timestamptz NOT NULL,
    hits    integer NOT NULL,
    PRIMARY KEY (user_id, budget, span, slot)
);
CREATE INDEX rate_counters_slot ON rate_counters (slot);

ALTER TABLE rate_counters ENABLE ROW LEVEL SECURITY;
ALTER TABLE rate_counters FORCE ROW LEVEL SECURITY;
CREATE POLICY rate_counters_tenant ON rate_counters
    USING (user_id = app_current_user_id()) WITH CHECK (user_id = app_current_user_id());

GRANT SELECT, INSERT, UPDATE ON rate_counters TO sessionvault_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON rate_counters TO sessionvault_admin;

DROP TABLE rate_limit_events;

-- The audit row is written at admission; a call that then fails records its error class and
-- latency on that row (the serving role may change only those columns, of its own rows).
ALTER TABLE audit_events ALTER COLUMN latency_ms DROP NOT NULL;
GRANT SELECT (id), UPDATE (outcome, error_class, latency_ms) ON audit_events TO sessionvault_app;

CREATE FUNCTION sessionvault_admit(
    p_key_hash bytea,
    p_budget text,            -- 'tool' (tools/call) or 'protocol' (everything else)
    p_per_minute integer,
    p_per_day integer,        -- 0: no day window for this budget
    p_request_id text,
    p_tool text,
    p_ip_hash bytea,
    p_ua_hash bytea
) RETURNS TABLE (
    status text,              -- ok | unknown_key | revoked_key | disabled_user | rate_limited
    user_id uuid,
    dek_wrapped bytea,
    key_id text,
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
    v_now timestamptz := clock_timestamp();
    v_minute integer;
    v_day integer;
    v_minute_free integer;
    v_day_free integer;
BEGIN
    SELECT ak.id, ak.user_id, ak.revoked_at, ak.last_used_at, u.disabled_at, u.dek_wrapped, u.key_id
    INTO k
    FROM api_keys ak JOIN users u ON u.id = ak.user_id
    WHERE ak.key_hash = p_key_hash;

    status := CASE
        WHEN k.id IS NULL THEN 'unknown_key'
        WHEN k.revoked_at IS NOT NULL THEN 'revoked_key'
        WHEN k.disabled_at IS NOT NULL THEN 'disabled_user'
        ELSE 'ok' END;
    IF status <> 'ok' THEN
        PERFORM set_config('synchronous_commit', 'off', true);
        -- No tenant: the row carries a NULL user, as the audit policy requires.
        INSERT INTO audit_events (user_id, request_id, tool, outcome, error_class, ip_hash, ua_hash)
        VALUES (NULL, p_request_id, p_tool, 'error', 'auth', p_ip_hash, p_ua_hash)
        RETURNING id INTO audit_id;
        RETURN NEXT;
        RETURN;
    END IF;

    -- The counters and the audit row need not wait for a disk flush: Postgres crashing in the
    -- next fraction of a second could lose them (never a session: tools commit as usual).
    PERFORM set_config('synchronous_commit', 'off', true);

    -- The tenant for the rest of this statement's transaction: RLS scopes what follows.
    PERFORM set_config('app.user_id', k.user_id::text, true);
    user_id := k.user_id;
    dek_wrapped := k.dek_wrapped;
    key_id := k.key_id;

    -- last_used_at at minute resolution: one write a minute, not one per request.
    IF k.last_used_at IS NULL OR k.last_used_at < v_now - interval '1 minute' THEN
        UPDATE api_keys SET last_used_at = v_now WHERE id = k.id;
    END IF;

    -- One admission at a time per user and budget: count-then-add is atomic under this lock.
    PERFORM pg_advisory_xact_lock(hashtextextended(k.user_id::text || '/' || p_budget, 7));
    SELECT
        coalesce(sum(c.hits) FILTER (WHERE c.span = 'minute' AND c.slot > v_now - interval '1 minute'), 0),
        coalesce(sum(c.hits) FILTER (WHERE c.span = 'day'), 0),
        ceil(EXTRACT(EPOCH FROM min(c.slot) FILTER (
            WHERE c.span = 'minute' AND c.slot > v_now - interval '1 minute')
            + interval '1 minute' - v_now)),
        ceil(EXTRACT(EPOCH FROM min(c.slot) FILTER (WHERE c.span = 'day') + interval '1 day' - v_now))
    INTO v_minute, v_day, v_minute_free, v_day_free
    FROM rate_counters c
    WHERE c.user_id = k.user_id AND c.budget = p_budget
      AND c.slot > v_now - interval '1 day';

    -- Refused: name the full window that frees up last (retrying sooner is pointless).
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
        INSERT INTO audit_events (user_id, request_id, tool, outcome, error_class, ip_hash, ua_hash)
        VALUES (k.user_id, p_request_id, p_tool, 'error', 'rate_limit', p_ip_hash, p_ua_hash)
        RETURNING id INTO audit_id;
        RETURN NEXT;
        RETURN;
    END IF;

    INSERT INTO rate_counters AS c (user_id, budget, span, slot, hits)
    VALUES (k.user_id, p_budget, 'minute', date_bin('5 seconds', v_now, timestamptz 'epoch'), 1),
           (k.user_id, p_budget, 'day', date_bin('1 hour', v_now, timestamptz 'epoch'), 1)
    ON CONFLICT ON CONSTRAINT rate_counters_pkey DO UPDATE SET hits = c.hits + 1;

    INSERT INTO audit_events (user_id, request_id, tool, outcome, ip_hash, ua_hash)
    VALUES (k.user_id, p_request_id, p_tool, 'ok', p_ip_hash, p_ua_hash)
    RETURNING id INTO audit_id;
    RETURN NEXT;
END;
$$;

REVOKE ALL ON FUNCTION sessionvault_admit(bytea, text, integer, integer, text, text, bytea, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_admit(bytea, text, integer, integer, text, text, bytea, bytea)
    TO sessionvault_app, sessionvault_admin;
