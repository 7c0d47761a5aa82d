-- OAuth 2.1 on the MCP endpoint: registered clients, pending authorization requests, codes and
-- tokens (stored only as SHA-256 hashes), and admission that takes an API key or an access token.
--
-- The serving role cannot mint anything: it has no INSERT/UPDATE on these tables. Every write
-- goes through a SECURITY DEFINER function below: a code only for a valid API key's hash, tokens
-- only for a valid code (PKCE S256 checked here too) or a valid refresh token.
--
-- Codes and tokens are user-owned: RLS ENABLE + FORCE like the other tenant tables. The definer
-- functions resolve a row by its hash before any tenant is known, so they are owned by a role of
-- their own, sessionvault_oauth (NOLOGIN, no BYPASSRLS), which a policy lets see these rows: no
-- login role does, the owner included (a non-superuser owner is bound by FORCE).

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sessionvault_oauth') THEN
        CREATE ROLE sessionvault_oauth NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END $$;
GRANT USAGE ON SCHEMA public TO sessionvault_oauth;

-- Not user-owned: a client exists before anyone approves it. Pruned when never used in 24 h.
CREATE TABLE oauth_clients (
    client_id    text PRIMARY KEY,
    secret_hash  bytea,                 -- SHA-256 of the client secret; NULL for a public client
    info         jsonb NOT NULL,        -- the registered metadata (RFC 7591), without the secret
    address      bytea,                 -- salted SHA-256 of the registrant's address (audit salt)
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz            -- an approval named it
);
CREATE INDEX oauth_clients_created ON oauth_clients (created_at);
CREATE INDEX oauth_clients_address ON oauth_clients (address, created_at);

-- An authorization request waiting for the owner on the consent page; the browser carries only
-- its random id. No user yet, so no RLS; 10 minutes, approved or denied once.
CREATE TABLE oauth_requests (
    id             text PRIMARY KEY,
    client_id      text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    redirect_uri   text NOT NULL,
    -- Bounded: anyone may create these rows (server/oauth/endpoints.py refuses first, with an error).
    state          text CHECK (length(state) <= 1024),
    code_challenge text NOT NULL CHECK (code_challenge ~ '^[A-Za-z0-9_-]{43}$'),  -- S256
    scopes         text[] NOT NULL,    -- as asked ('{}': whatever the approving key has)
    resource       text NOT NULL,
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz
);
CREATE INDEX oauth_requests_client ON oauth_requests (client_id, expires_at);

CREATE TABLE oauth_codes (
    code_hash      bytea PRIMARY KEY,
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    api_key_id     uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    client_id      text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    family_id      uuid NOT NULL,      -- the tokens this code yields, and all their successors
    redirect_uri   text NOT NULL,
    code_challenge text NOT NULL,
    scopes         text[] NOT NULL,
    resource       text NOT NULL,
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz
);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);

CREATE TABLE oauth_tokens (
    token_hash  bytea PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('access', 'refresh')),
    family_id   uuid NOT NULL,
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    api_key_id  uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,  -- dies with the key
    client_id   text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    scopes      text[] NOT NULL CHECK (scopes <@ ARRAY['read', 'write', 'delete']),
    resource    text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,           -- a refresh token, rotated: a second use revokes the family
    revoked_at  timestamptz
);
CREATE INDEX oauth_tokens_family ON oauth_tokens (family_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

ALTER TABLE oauth_codes ENABLE ROW LEVEL SECURITY;
ALTER TABLE oauth_codes FORCE ROW LEVEL SECURITY;
CREATE POLICY oauth_codes_tenant ON oauth_codes
    USING (user_id = app_current_user_id()) WITH CHECK (user_id = app_current_user_id());
CREATE POLICY oauth_codes_definer ON oauth_codes TO sessionvault_oauth USING (true) WITH CHECK (true);

ALTER TABLE oauth_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE oauth_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY oauth_tokens_tenant ON oauth_tokens
    USING (user_id = app_current_user_id()) WITH CHECK (user_id = app_current_user_id());
CREATE POLICY oauth_tokens_definer ON oauth_tokens TO sessionvault_oauth USING (true) WITH CHECK (true);

-- The serving role reads clients (token endpoint, consent page) and pending requests; nothing else.
GRANT SELECT ON oauth_clients, oauth_requests TO sessionvault_app;
GRANT SELECT, DELETE ON oauth_clients, oauth_requests TO sessionvault_admin;
GRANT SELECT, DELETE ON oauth_codes, oauth_tokens TO sessionvault_admin;
GRANT UPDATE (revoked_at) ON oauth_tokens TO sessionvault_admin;
GRANT SELECT ON oauth_clients, oauth_requests, oauth_codes, oauth_tokens TO sessionvault_maint;
-- What the definer functions touch, as sessionvault_oauth.
GRANT SELECT, INSERT, UPDATE, DELETE ON oauth_clients, oauth_requests, oauth_codes, oauth_tokens
    TO sessionvault_oauth;
GRANT SELECT ON users, api_keys TO sessionvault_oauth;
GRANT UPDATE (last_used_at) ON api_keys TO sessionvault_oauth;
GRANT SELECT, INSERT, UPDATE ON auth_failures TO sessionvault_oauth;

-- A key hash's state: the one place both the key lookup and OAuth decide "is this key usable".
CREATE FUNCTION sessionvault_oauth_key_status(p_revoked timestamptz, p_disabled timestamptz)
RETURNS text LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$ SELECT CASE WHEN p_revoked IS NOT NULL THEN 'revoked_key'
                  WHEN p_disabled IS NOT NULL THEN 'disabled_user' ELSE 'ok' END $$;

-- The scopes in both lists, in the canonical order.
CREATE FUNCTION sessionvault_oauth_scopes(p_a text[], p_b text[])
RETURNS text[] LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$ SELECT ARRAY(SELECT s FROM unnest(ARRAY['read', 'write', 'delete']) WITH ORDINALITY AS t (s, n)
                   WHERE s = ANY (p_a) AND s = ANY (p_b) ORDER BY n) $$;

CREATE FUNCTION sessionvault_oauth_fail(p_reason text) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    INSERT INTO public.auth_failures AS f (slot, reason, hits)
    VALUES (date_trunc('minute', clock_timestamp()), p_reason, 1)
    ON CONFLICT ON CONSTRAINT auth_failures_pkey DO UPDATE SET hits = f.hits + 1
$$;

-- Revoke every token of a family (reuse of a code or refresh token, /revoke).
CREATE FUNCTION sessionvault_oauth_revoke_family(p_family uuid) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    UPDATE public.oauth_tokens SET revoked_at = clock_timestamp()
    WHERE family_id = p_family AND revoked_at IS NULL
$$;

-- Dynamic registration is unauthenticated: at most p_per_hour new clients an hour, server-wide.
-- Two caps an hour: per registrant address first (so one caller cannot use up the
-- server-wide budget every new connector needs), then server-wide. 'ok', 'address_cap' or
-- 'server_cap'.
CREATE FUNCTION sessionvault_oauth_register(
    p_client_id text, p_secret_hash bytea, p_info jsonb, p_per_hour integer,
    p_address bytea, p_per_address integer
) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
BEGIN
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
    INSERT INTO public.oauth_clients (client_id, secret_hash, info, address)
    VALUES (p_client_id, p_secret_hash, p_info, p_address);
    RETURN 'ok';
END;
$$;

-- A pending request; a client may hold at most p_per_client live ones.
CREATE FUNCTION sessionvault_oauth_begin(
    p_id text, p_client_id text, p_redirect_uri text, p_state text, p_code_challenge text,
    p_scopes text[], p_resource text, p_per_client integer
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('sessionvault_oauth_begin/' || p_client_id, 7));
    DELETE FROM public.oauth_requests WHERE client_id = p_client_id AND expires_at <= clock_timestamp();
    IF (SELECT count(*) FROM public.oauth_requests WHERE client_id = p_client_id) >= p_per_client THEN
        PERFORM sessionvault_oauth_fail('oauth_request_cap');
        RETURN false;
    END IF;
    INSERT INTO public.oauth_requests
        (id, client_id, redirect_uri, state, code_challenge, scopes, resource, expires_at)
    VALUES (p_id, p_client_id, p_redirect_uri, p_state, p_code_challenge, p_scopes, p_resource,
            clock_timestamp() + interval '10 minutes');
    RETURN true;
END;
$$;

-- The owner approves a pending request with one of their API keys (its hash): one code, with at
-- most that key's scopes. A bad key leaves the request open (the page asks again) and counts as
-- a failed authentication. status: ok | unknown_request | bad_key | no_scope.
CREATE FUNCTION sessionvault_oauth_approve(p_request_id text, p_key_hash bytea, p_code_hash bytea)
RETURNS TABLE (status text, redirect_uri text, state text, scopes text[])
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    r record;
    k record;
BEGIN
    SELECT * INTO r FROM public.oauth_requests q
    WHERE q.id = p_request_id AND q.used_at IS NULL AND q.expires_at > clock_timestamp()
    FOR UPDATE;
    IF r.id IS NULL THEN
        status := 'unknown_request';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT ak.id, ak.user_id, ak.scopes, sessionvault_oauth_key_status(ak.revoked_at, u.disabled_at) AS st
    INTO k
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id
    WHERE ak.key_hash = p_key_hash;
    IF k.id IS NULL OR k.st <> 'ok' THEN
        PERFORM sessionvault_oauth_fail('consent_' || coalesce(k.st, 'unknown_key'));
        status := 'bad_key';
        RETURN NEXT;
        RETURN;
    END IF;
    UPDATE public.oauth_requests SET used_at = clock_timestamp() WHERE id = r.id;
    redirect_uri := r.redirect_uri;
    state := r.state;
    scopes := sessionvault_oauth_scopes(
        CASE WHEN cardinality(r.scopes) = 0 THEN k.scopes ELSE r.scopes END, k.scopes);
    IF cardinality(scopes) = 0 THEN
        status := 'no_scope';
        RETURN NEXT;
        RETURN;
    END IF;
    INSERT INTO public.oauth_codes (code_hash, user_id, api_key_id, client_id, family_id, redirect_uri,
                                    code_challenge, scopes, resource, expires_at)
    VALUES (p_code_hash, k.user_id, k.id, r.client_id, gen_random_uuid(), r.redirect_uri,
            r.code_challenge, scopes, r.resource, clock_timestamp() + interval '10 minutes');
    UPDATE public.oauth_clients SET last_used_at = clock_timestamp() WHERE client_id = r.client_id;
    status := 'ok';
    RETURN NEXT;
END;
$$;

-- The owner said no: the request is closed; where to send the browser.
CREATE FUNCTION sessionvault_oauth_deny(p_request_id text)
RETURNS TABLE (redirect_uri text, state text)
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    UPDATE public.oauth_requests SET used_at = clock_timestamp()
    WHERE id = p_request_id AND used_at IS NULL AND expires_at > clock_timestamp()
    RETURNING redirect_uri, state
$$;

-- A code as the token endpoint first reads it. A code already used is refused, and every token
-- it produced is revoked (OAuth 2.1 section 4.1.3: it may have been stolen).
CREATE FUNCTION sessionvault_oauth_code(p_code_hash bytea)
RETURNS TABLE (client_id text, redirect_uri text, code_challenge text, scopes text[], resource text,
               expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    c record;
BEGIN
    SELECT * INTO c FROM public.oauth_codes WHERE code_hash = p_code_hash;
    IF c.code_hash IS NULL THEN
        RETURN;
    END IF;
    IF c.used_at IS NOT NULL THEN
        PERFORM sessionvault_oauth_revoke_family(c.family_id);
        RETURN;
    END IF;
    client_id := c.client_id;
    redirect_uri := c.redirect_uri;
    code_challenge := c.code_challenge;
    scopes := c.scopes;
    resource := c.resource;
    expires_at := c.expires_at;
    RETURN NEXT;
END;
$$;

-- Mint an access and a refresh token of `p_family` (hashes made by the caller from fresh random
-- tokens it alone sees).
CREATE FUNCTION sessionvault_oauth_mint(
    p_family uuid, p_user uuid, p_key uuid, p_client text, p_scopes text[], p_resource text,
    p_access_hash bytea, p_refresh_hash bytea, p_access_ttl_s integer, p_refresh_ttl_s integer
) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    INSERT INTO public.oauth_tokens
        (token_hash, kind, family_id, user_id, api_key_id, client_id, scopes, resource, expires_at)
    VALUES
        (p_access_hash, 'access', p_family, p_user, p_key, p_client, p_scopes, p_resource,
         clock_timestamp() + make_interval(secs => p_access_ttl_s)),
        (p_refresh_hash, 'refresh', p_family, p_user, p_key, p_client, p_scopes, p_resource,
         clock_timestamp() + make_interval(secs => p_refresh_ttl_s))
$$;
REVOKE ALL ON FUNCTION sessionvault_oauth_mint(uuid, uuid, uuid, text, text[], text, bytea, bytea, integer, integer)
    FROM PUBLIC;

-- Code -> tokens. Everything is checked again here, whatever the caller checked: unused,
-- unexpired, same client, same redirect URI, same resource, the PKCE S256 verifier, and the
-- approving key still valid. status: ok | invalid_grant.
CREATE FUNCTION sessionvault_oauth_exchange(
    p_code_hash bytea, p_client_id text, p_redirect_uri text, p_verifier text, p_resource text,
    p_access_hash bytea, p_refresh_hash bytea, p_access_ttl_s integer, p_refresh_ttl_s integer
) RETURNS TABLE (status text, scopes text[])
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    c record;
    k record;
BEGIN
    status := 'invalid_grant';
    SELECT * INTO c FROM public.oauth_codes WHERE code_hash = p_code_hash FOR UPDATE;
    IF c.code_hash IS NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    IF c.used_at IS NOT NULL THEN
        PERFORM sessionvault_oauth_revoke_family(c.family_id);
        RETURN NEXT;
        RETURN;
    END IF;
    IF c.expires_at <= clock_timestamp() OR c.client_id <> p_client_id
       OR c.redirect_uri <> p_redirect_uri OR c.resource <> p_resource
       OR p_verifier IS NULL OR length(p_verifier) NOT BETWEEN 43 AND 128
       OR rtrim(translate(encode(sha256(convert_to(p_verifier, 'UTF8')), 'base64'), '+/', '-_'), '=')
          <> c.code_challenge THEN
        RETURN NEXT;
        RETURN;
    END IF;
    -- The code is spent whatever follows: a second attempt is a reuse.
    UPDATE public.oauth_codes SET used_at = clock_timestamp() WHERE code_hash = p_code_hash;
    SELECT ak.scopes, sessionvault_oauth_key_status(ak.revoked_at, u.disabled_at) AS st INTO k
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id WHERE ak.id = c.api_key_id;
    IF k.st IS DISTINCT FROM 'ok' THEN
        RETURN NEXT;
        RETURN;
    END IF;
    scopes := sessionvault_oauth_scopes(c.scopes, k.scopes);
    PERFORM sessionvault_oauth_mint(c.family_id, c.user_id, c.api_key_id, c.client_id, scopes,
                                    c.resource, p_access_hash, p_refresh_hash, p_access_ttl_s, p_refresh_ttl_s);
    status := 'ok';
    RETURN NEXT;
END;
$$;

-- A live token by its hash (the refresh grant's first read, and /revoke). A refresh token used
-- before is a reuse: its whole family is revoked and nothing is returned.
CREATE FUNCTION sessionvault_oauth_token(p_hash bytea)
RETURNS TABLE (kind text, client_id text, scopes text[], resource text, expires_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    t record;
BEGIN
    SELECT * INTO t FROM public.oauth_tokens WHERE token_hash = p_hash;
    IF t.token_hash IS NULL OR t.revoked_at IS NOT NULL THEN
        RETURN;
    END IF;
    IF t.kind = 'refresh' AND t.used_at IS NOT NULL THEN
        PERFORM sessionvault_oauth_revoke_family(t.family_id);
        RETURN;
    END IF;
    kind := t.kind;
    client_id := t.client_id;
    scopes := t.scopes;
    resource := t.resource;
    expires_at := t.expires_at;
    RETURN NEXT;
END;
$$;

-- Refresh: the old refresh token is spent, a new pair of the same family minted (rotation).
-- Used twice (a race included: the row is locked), the family is revoked. status: ok | invalid_grant.
CREATE FUNCTION sessionvault_oauth_refresh(
    p_hash bytea, p_client_id text, p_scopes text[], p_resource text,
    p_access_hash bytea, p_refresh_hash bytea, p_access_ttl_s integer, p_refresh_ttl_s integer
) RETURNS TABLE (status text, scopes text[])
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    t record;
    k record;
BEGIN
    status := 'invalid_grant';
    SELECT * INTO t FROM public.oauth_tokens WHERE token_hash = p_hash AND kind = 'refresh' FOR UPDATE;
    IF t.token_hash IS NULL OR t.revoked_at IS NOT NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;
    IF t.used_at IS NOT NULL THEN
        PERFORM sessionvault_oauth_revoke_family(t.family_id);
        RETURN NEXT;
        RETURN;
    END IF;
    IF t.expires_at <= clock_timestamp() OR t.client_id <> p_client_id OR t.resource <> p_resource
       OR NOT (p_scopes <@ t.scopes) THEN
        RETURN NEXT;
        RETURN;
    END IF;
    UPDATE public.oauth_tokens SET used_at = clock_timestamp() WHERE token_hash = p_hash;
    SELECT ak.scopes, sessionvault_oauth_key_status(ak.revoked_at, u.disabled_at) AS st INTO k
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id WHERE ak.id = t.api_key_id;
    IF k.st IS DISTINCT FROM 'ok' THEN
        RETURN NEXT;
        RETURN;
    END IF;
    scopes := sessionvault_oauth_scopes(
        CASE WHEN cardinality(p_scopes) = 0 THEN t.scopes ELSE p_scopes END, k.scopes);
    PERFORM sessionvault_oauth_mint(t.family_id, t.user_id, t.api_key_id, t.client_id, scopes,
                                    t.resource, p_access_hash, p_refresh_hash, p_access_ttl_s, p_refresh_ttl_s);
    status := 'ok';
    RETURN NEXT;
END;
$$;

-- RFC 7009: revoking either token of a family revokes the family (only the client's own).
CREATE FUNCTION sessionvault_oauth_revoke(p_hash bytea, p_client_id text) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT sessionvault_oauth_revoke_family(family_id) FROM public.oauth_tokens
    WHERE token_hash = p_hash AND client_id = p_client_id
$$;

-- Housekeeping (the maintenance task): expired requests, codes and tokens, and clients nobody
-- approved within a day of registering. Refresh tokens outlive their access tokens, so a
-- family goes when its last token has expired.
CREATE FUNCTION sessionvault_oauth_prune() RETURNS TABLE (what text, deleted bigint)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    n bigint;
BEGIN
    DELETE FROM public.oauth_requests WHERE expires_at <= clock_timestamp();
    GET DIAGNOSTICS n = ROW_COUNT;
    what := 'requests'; deleted := n; RETURN NEXT;
    DELETE FROM public.oauth_codes WHERE expires_at <= clock_timestamp() - interval '1 day';
    GET DIAGNOSTICS n = ROW_COUNT;
    what := 'codes'; deleted := n; RETURN NEXT;
    DELETE FROM public.oauth_tokens WHERE expires_at <= clock_timestamp() - interval '1 day';
    GET DIAGNOSTICS n = ROW_COUNT;
    what := 'tokens'; deleted := n; RETURN NEXT;
    DELETE FROM public.oauth_clients
    WHERE last_used_at IS NULL AND created_at <= clock_timestamp() - interval '1 day';
    GET DIAGNOSTICS n = ROW_COUNT;
    what := 'clients'; deleted := n; RETURN NEXT;
END;
$$;

-- Admission takes an API key's hash or an access token's hash, and the resource the request
-- was made to. A token is refused (like an unknown key, the reason only in the log and the
-- auth_failures counter) when revoked, expired, bound to another resource, or when the key
-- that approved it is revoked or its user disabled. The scopes are the token's, within the key's.
DROP FUNCTION sessionvault_admit(bytea, text, integer, integer, text, text, bytea, bytea);
DROP FUNCTION sessionvault_key(bytea);

CREATE FUNCTION sessionvault_key(p_key_hash bytea, p_resource text)
RETURNS TABLE (user_id uuid, status text, dek_wrapped bytea, key_id text, scopes text[])
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
        SELECT ot.user_id, ot.api_key_id, ot.scopes, ot.resource, ot.expires_at, ot.revoked_at
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

-- Admission in one statement, as in 0003, with the resource passed on to the key lookup.
CREATE FUNCTION sessionvault_admit(
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

-- Hand every definer function to sessionvault_oauth (ALTER OWNER needs membership and, for that
-- moment, CREATE on the schema), then take both back: no login role keeps either. The
-- membership goes last: a non-superuser owner (Neon, RDS) needs it for the grants below, on
-- functions sessionvault_oauth now owns.
GRANT sessionvault_oauth TO CURRENT_USER;
GRANT CREATE ON SCHEMA public TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_fail(text) OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_revoke_family(uuid) OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_register(text, bytea, jsonb, integer, bytea, integer) OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_begin(text, text, text, text, text, text[], text, integer)
    OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_approve(text, bytea, bytea) OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_deny(text) OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_code(bytea) OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_mint(uuid, uuid, uuid, text, text[], text, bytea, bytea, integer, integer)
    OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_exchange(bytea, text, text, text, text, bytea, bytea, integer, integer)
    OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_token(bytea) OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_refresh(bytea, text, text[], text, bytea, bytea, integer, integer)
    OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_revoke(bytea, text) OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_oauth_prune() OWNER TO sessionvault_oauth;
ALTER FUNCTION sessionvault_key(bytea, text) OWNER TO sessionvault_oauth;
REVOKE CREATE ON SCHEMA public FROM sessionvault_oauth;

-- Who may call what. Internal helpers: only the definer functions (as sessionvault_oauth).
REVOKE ALL ON FUNCTION sessionvault_oauth_fail(text), sessionvault_oauth_revoke_family(uuid),
    sessionvault_oauth_mint(uuid, uuid, uuid, text, text[], text, bytea, bytea, integer, integer)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION
    sessionvault_oauth_register(text, bytea, jsonb, integer, bytea, integer),
    sessionvault_oauth_begin(text, text, text, text, text, text[], text, integer),
    sessionvault_oauth_approve(text, bytea, bytea),
    sessionvault_oauth_deny(text),
    sessionvault_oauth_code(bytea),
    sessionvault_oauth_exchange(bytea, text, text, text, text, bytea, bytea, integer, integer),
    sessionvault_oauth_token(bytea),
    sessionvault_oauth_refresh(bytea, text, text[], text, bytea, bytea, integer, integer),
    sessionvault_oauth_revoke(bytea, text),
    sessionvault_oauth_prune(),
    sessionvault_key(bytea, text),
    sessionvault_admit(bytea, text, text, integer, integer, text, text, bytea, bytea)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    sessionvault_oauth_register(text, bytea, jsonb, integer, bytea, integer),
    sessionvault_oauth_begin(text, text, text, text, text, text[], text, integer),
    sessionvault_oauth_approve(text, bytea, bytea),
    sessionvault_oauth_deny(text),
    sessionvault_oauth_code(bytea),
    sessionvault_oauth_exchange(bytea, text, text, text, text, bytea, bytea, integer, integer),
    sessionvault_oauth_token(bytea),
    sessionvault_oauth_refresh(bytea, text, text[], text, bytea, bytea, integer, integer),
    sessionvault_oauth_revoke(bytea, text),
    sessionvault_key(bytea, text),
    sessionvault_admit(bytea, text, text, integer, integer, text, text, bytea, bytea)
    TO sessionvault_app;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_prune() TO sessionvault_maint, sessionvault_admin;
REVOKE sessionvault_oauth FROM CURRENT_USER;
