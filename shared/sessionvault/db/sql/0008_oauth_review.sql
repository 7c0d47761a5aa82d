-- OAuth, after review (docs/oauth.md): the audit trail names the OAuth client behind each
-- token-admitted call, and a client may be known by the URL of its metadata document (CIMD)
-- instead of a registration.

-- The OAuth client an admitted call came through: its client_id (public, never a secret; the
-- token itself is never stored here). NULL for a call made with an API key.
ALTER TABLE audit_events ADD COLUMN oauth_client_id text;

-- A client whose client_id is an https URL is stored from its fetched metadata document
-- (server/oauth/cimd.py), and this row is the cache: trusted until document_expires_at, then fetched
-- again. NULL: a dynamically registered client.
ALTER TABLE oauth_clients ADD COLUMN document_expires_at timestamptz;

-- Store or refresh a client from its metadata document, the app having fetched and checked it.
-- A refresh (the id is already a document's) updates it; a new one counts against the hour's
-- registrations exactly like a registration (per caller address first, then server-wide). A
-- registered client's row is never touched (a registered id is a UUID, never a URL: 'conflict').
-- ok | address_cap | server_cap | conflict.
CREATE FUNCTION sessionvault_oauth_document(
    p_client_id text, p_info jsonb, p_ttl_s integer, p_per_hour integer,
    p_address bytea, p_per_address integer
) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_document timestamptz;
    v_until timestamptz := clock_timestamp() + make_interval(secs => least(greatest(p_ttl_s, 60), 86400));
BEGIN
    IF left(p_client_id, 8) <> 'https://' OR length(p_client_id) > 512
       OR p_info ->> 'client_id' IS DISTINCT FROM p_client_id THEN
        RETURN 'conflict';
    END IF;
    SELECT c.document_expires_at INTO v_document
    FROM public.oauth_clients c WHERE c.client_id = p_client_id FOR UPDATE;
    IF FOUND THEN
        IF v_document IS NULL THEN
            RETURN 'conflict';
        END IF;
        UPDATE public.oauth_clients SET info = p_info, document_expires_at = v_until
        WHERE client_id = p_client_id;
        RETURN 'ok';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('sessionvault_oauth_register', 7));
    IF (SELECT count(*) FROM public.oauth_clients
        WHERE address IS NOT DISTINCT FROM p_address
          AND created_at > clock_timestamp() - interval '1 hour') >= p_per_address THEN
        PERFORM sessionvault_oauth_fail('oauth_register_address_cap');
        RETURN 'address_cap';
    END IF;
    IF (SELECT count(*) FROM public.oauth_clients
        WHERE created_at > clock_timestamp() - interval '1 hour') >= p_per_hour THEN
        PERFORM sessionvault_oauth_fail('oauth_register_cap');
        RETURN 'server_cap';
    END IF;
    INSERT INTO public.oauth_clients AS c (client_id, secret_hash, info, address, document_expires_at)
    VALUES (p_client_id, NULL, p_info, p_address, v_until)
    ON CONFLICT (client_id) DO UPDATE SET info = EXCLUDED.info, document_expires_at = EXCLUDED.document_expires_at
        WHERE c.document_expires_at IS NOT NULL;  -- a concurrent first fetch of the same document
    RETURN 'ok';
END;
$$;

-- The key lookup of 0005, now also answering which OAuth client a token belongs to (NULL for
-- an API key), so that admission can put it on the audit row. Otherwise unchanged.
GRANT sessionvault_oauth TO CURRENT_USER;
DROP FUNCTION sessionvault_key(bytea, text);

CREATE FUNCTION sessionvault_key(p_key_hash bytea, p_resource text)
RETURNS TABLE (user_id uuid, status text, dek_wrapped bytea, key_id text, scopes text[], client_id text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    k record;
    t record;
BEGIN
    SELECT ak.id, ak.user_id, ak.revoked_at, ak.last_used_at, ak.scopes,
           u.disabled_at, u.dek_wrapped, u.key_id
    INTO k
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id
    WHERE ak.key_hash = p_key_hash;
    IF k.id IS NULL THEN
        SELECT ot.user_id, ot.api_key_id, ot.client_id, ot.scopes, ot.resource, ot.expires_at, ot.revoked_at
        INTO t
        FROM public.oauth_tokens ot WHERE ot.token_hash = p_key_hash AND ot.kind = 'access';
        IF t.user_id IS NULL THEN
            RETURN;  -- no row: an unknown key
        END IF;
        SELECT ak.id, ak.user_id, ak.revoked_at, ak.scopes, u.disabled_at, u.dek_wrapped, u.key_id
        INTO k
        FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id
        WHERE ak.id = t.api_key_id;
        user_id := t.user_id;
        client_id := t.client_id;
        status := CASE
            WHEN t.revoked_at IS NOT NULL THEN 'revoked_token'
            WHEN t.expires_at <= clock_timestamp() THEN 'expired_token'
            WHEN t.resource IS DISTINCT FROM p_resource THEN 'wrong_resource'
            ELSE sessionvault_oauth_key_status(k.revoked_at, k.disabled_at) END;
        IF status = 'ok' THEN
            dek_wrapped := k.dek_wrapped;
            key_id := k.key_id;
            scopes := sessionvault_oauth_scopes(t.scopes, k.scopes);
        END IF;
        RETURN NEXT;
        RETURN;
    END IF;
    status := sessionvault_oauth_key_status(k.revoked_at, k.disabled_at);
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

-- Admission as in 0005 (same arguments, same answer), the audit row now naming the OAuth client.
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
    v_now timestamptz := clock_timestamp();
    v_minute integer;
    v_day integer;
    v_minute_free integer;
    v_day_free integer;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);

    SELECT * INTO k FROM sessionvault_key(p_key_hash, p_resource);
    status := coalesce(k.status, 'unknown_key');
    IF status <> 'ok' THEN
        INSERT INTO auth_failures AS f (slot, reason, hits)
        VALUES (date_trunc('minute', v_now), status, 1)
        ON CONFLICT ON CONSTRAINT auth_failures_pkey DO UPDATE SET hits = f.hits + 1;
        RETURN NEXT;
        RETURN;
    END IF;

    PERFORM set_config('app.user_id', k.user_id::text, true);
    user_id := k.user_id;
    dek_wrapped := k.dek_wrapped;
    key_id := k.key_id;
    scopes := k.scopes;

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
        VALUES (k.user_id, p_request_id, p_tool, 'error', 'rate_limit', p_ip_hash, p_ua_hash, k.client_id)
        RETURNING id INTO audit_id;
        RETURN NEXT;
        RETURN;
    END IF;

    INSERT INTO rate_counters AS c (user_id, budget, span, slot, hits)
    VALUES (k.user_id, p_budget, 'minute', date_bin('5 seconds', v_now, timestamptz 'epoch'), 1),
           (k.user_id, p_budget, 'day', date_bin('1 hour', v_now, timestamptz 'epoch'), 1)
    ON CONFLICT ON CONSTRAINT rate_counters_pkey DO UPDATE SET hits = c.hits + 1;

    INSERT INTO audit_events (user_id, request_id, tool, outcome, ip_hash, ua_hash, oauth_client_id)
    VALUES (k.user_id, p_request_id, p_tool, 'ok', p_ip_hash, p_ua_hash, k.client_id)
    RETURNING id INTO audit_id;
    RETURN NEXT;
END;
$$;

-- Ownership and grants as in 0005: the definer functions belong to sessionvault_oauth (NOLOGIN);
-- the membership (taken above, to drop its old function) is given back last.
GRANT CREATE ON SCHEMA public TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_document(text, jsonb, integer, integer, bytea, integer)
    OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_key(bytea, text) OWNER TO sessionvault_oauth;
REVOKE CREATE ON SCHEMA public FROM sessionvault_oauth;

REVOKE ALL ON FUNCTION
    sessionvault_oauth_document(text, jsonb, integer, integer, bytea, integer),
    sessionvault_key(bytea, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    sessionvault_oauth_document(text, jsonb, integer, integer, bytea, integer),
    sessionvault_key(bytea, text)
    TO sessionvault_app;
REVOKE sessionvault_oauth FROM CURRENT_USER;
