-- Least privilege and limits: scoped keys, a key lookup the serving role can call but not
-- look past, failed authentications counted instead of stored one row each, per-user quotas,
-- a maintenance role that cannot touch keys, and no object creation in public by anyone else.

REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- Two more error classes: a key without the scope a tool needs, a user over a quota.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_error_class_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_error_class_check CHECK (error_class IN
    ('auth', 'rate_limit', 'validation', 'db', 'provider', 'timeout', 'internal', 'scope', 'quota'));
-- Admin actions are audited too: which key (its display prefix, never the key) they touched.
ALTER TABLE audit_events ADD COLUMN key_prefix text;

-- Scoped keys: read (load, list, search), write (save), delete (delete, delete all).
ALTER TABLE api_keys ADD COLUMN scopes text[] NOT NULL DEFAULT '{read,write}'
    CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['read', 'write', 'delete']);

-- The serving role no longer reads the identity plane: it resolves one key through this
-- function, which returns that key's row (or nothing) and touches its last use.
CREATE FUNCTION sessionvault_key(p_key_hash bytea)
RETURNS TABLE (user_id uuid, status text, dek_wrapped bytea, key_id text, scopes text[])
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    k record;
BEGIN
    SELECT ak.id, ak.user_id, ak.revoked_at, ak.last_used_at, ak.scopes,
           u.disabled_at, u.dek_wrapped, u.key_id
    INTO k
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id
    WHERE ak.key_hash = p_key_hash;
    IF k.id IS NULL THEN
        RETURN;  -- no row: an unknown key
    END IF;
    status := CASE
        WHEN k.revoked_at IS NOT NULL THEN 'revoked_key'
        WHEN k.disabled_at IS NOT NULL THEN 'disabled_user'
        ELSE 'ok' END;
    user_id := k.user_id;
    IF status = 'ok' THEN
        dek_wrapped := k.dek_wrapped;
        key_id := k.key_id;
        scopes := k.scopes;
        -- last_used_at at minute resolution: one write a minute, not one per request.
        IF k.last_used_at IS NULL OR k.last_used_at < clock_timestamp() - interval '1 minute' THEN
            UPDATE public.api_keys SET last_used_at = clock_timestamp() WHERE id = k.id;
        END IF;
    END IF;
    RETURN NEXT;
END;
$$;
REVOKE ALL ON FUNCTION sessionvault_key(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_key(bytea) TO sessionvault_app;
REVOKE SELECT ON users, api_keys FROM sessionvault_app;
REVOKE UPDATE (last_used_at) ON api_keys FROM sessionvault_app;

-- Failed authentications: one counter row per minute and reason, not one audit row each
-- (a flood of bad keys must not grow the database). No tenant: no RLS, counters only.
CREATE TABLE auth_failures (
    slot   timestamptz NOT NULL,
    reason text NOT NULL,
    hits   integer NOT NULL,
    PRIMARY KEY (slot, reason)
);
GRANT SELECT, INSERT, UPDATE ON auth_failures TO sessionvault_app;
GRANT SELECT, DELETE ON auth_failures TO sessionvault_admin;

-- The plaintext columns a listing shows (name, repo, client, preview) are authenticated: an
-- HMAC under a key derived from the user's data key, so a changed row is caught on listing.
ALTER TABLE sessions ADD COLUMN meta_mac bytea;

-- What each user stores, kept by the save and delete statements: a quota check reads one row.
CREATE TABLE user_usage (
    user_id  uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    sessions integer NOT NULL,
    bytes    bigint NOT NULL,
    -- SHA-256 of the data key the user's rows are under, once a re-key set it: a save that
    -- read the old key before a re-key committed is refused instead of writing under it.
    dek_fp   bytea
);
-- When the user's data key was made: a re-key run resumes with the users made before it began.
ALTER TABLE users ADD COLUMN dek_created_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE user_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE user_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY user_usage_tenant ON user_usage
    USING (user_id = app_current_user_id()) WITH CHECK (user_id = app_current_user_id());
GRANT SELECT, INSERT, UPDATE ON user_usage TO sessionvault_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON user_usage TO sessionvault_admin;

-- Admission in one statement: look up the key, set the tenant, apply the rate limit and write
-- the audit row in a single round trip.
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
    v_now timestamptz := clock_timestamp();
    v_minute integer;
    v_day integer;
    v_minute_free integer;
    v_day_free integer;
BEGIN
    -- Counters and the audit row need not wait for a disk flush: Postgres crashing in the next
    -- fraction of a second could lose them (never a session: tools commit as usual).
    PERFORM set_config('synchronous_commit', 'off', true);

    SELECT * INTO k FROM sessionvault_key(p_key_hash);
    status := coalesce(k.status, 'unknown_key');
    IF status <> 'ok' THEN
        INSERT INTO auth_failures AS f (slot, reason, hits)
        VALUES (date_trunc('minute', v_now), status, 1)
        ON CONFLICT ON CONSTRAINT auth_failures_pkey DO UPDATE SET hits = f.hits + 1;
        RETURN NEXT;
        RETURN;
    END IF;

    -- The tenant for the rest of this statement's transaction: RLS scopes what follows.
    PERFORM set_config('app.user_id', k.user_id::text, true);
    user_id := k.user_id;
    dek_wrapped := k.dek_wrapped;
    key_id := k.key_id;
    scopes := k.scopes;

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
    TO sessionvault_app;

-- The maintenance jobs (prune, re-embed) get a role of their own: they walk the users to set
-- each tenant and unwrap its key, and may write nothing on the identity plane.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sessionvault_maint') THEN
        CREATE ROLE sessionvault_maint NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END $$;
GRANT USAGE ON SCHEMA public TO sessionvault_maint;
GRANT SELECT (id, dek_wrapped, key_id) ON users TO sessionvault_maint;
GRANT SELECT ON sessions, session_versions TO sessionvault_maint;
GRANT UPDATE (embedding, embedding_model, embed_failures, embed_retry_at) ON sessions TO sessionvault_maint;
GRANT SELECT, DELETE ON rate_counters, audit_events, auth_failures TO sessionvault_maint;
