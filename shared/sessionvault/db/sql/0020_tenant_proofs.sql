-- A wall that holds against SQL injection (issue 34): the database decides whose call it is.
--
-- Until now every tenant wall was row-level security over app_current_user_id(), which read the
-- `app.user_id` setting, and the serving role could set that setting itself: one injected
-- statement (`SELECT set_config('app.user_id', '<anyone>', true)`) read and wrote anyone's rows,
-- and sessionvault_enter_workspace trusted it as the caller. Now, for the serving role
-- (sessionvault_app), the setting holds a *proof*, not an id:
--
--   p1.<tenant uuid>.<expiry, epoch seconds>.<key id>.<mac>
--   mac = hex(sha256(outer_key || sha256(inner_key || payload)))   (payload: all before the mac)
--
-- minted only inside the database, by definer functions that have just verified the caller: the
-- admission (the API key's or token's SHA-256, through sessionvault_key) and the workspace entry
-- (a member of the workspace, as the verified caller). The two keys are random, kept in
-- tenant_proof_keys, which only sessionvault_proofs (NOLOGIN) can read; the serving role can
-- neither read them nor call the minting function. The MAC is the envelope construction over the
-- built-in sha256 (no extension needed on RDS, Neon or the embedded server): two independent
-- random keys, the outer hash over the inner one, so no length extension.
--
-- app_current_user_id() verifies the proof (a known key not retired over 2 minutes ago, not
-- expired at the transaction's start, the MAC) and answers its tenant, else NULL: every policy
-- fails closed on a forged, altered, expired or unset proof. A proof lives 60 s and names one
-- tenant: one read inside an injected statement reaches that request's own tenant only.
-- The job roles (admin, maintenance; the owner) are not the serving role: they may still set a
-- plain id (docs/security.md says what each may do and why).
--
-- The server never holds a key: it reads the minted proof back from the setting in the
-- admission's own statement and sends it, as a bind parameter, at the start of each later
-- transaction of the same call (db/pool.py).

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sessionvault_proofs') THEN
        CREATE ROLE sessionvault_proofs NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END $$;
GRANT USAGE ON SCHEMA public TO sessionvault_proofs;
-- Replacing sessionvault_enter_workspace and granting on sessionvault_key need their owners'
-- rights (a migration owner need not be a superuser: RDS); given back at the end.
GRANT sessionvault_spaces TO CURRENT_USER;
GRANT sessionvault_oauth TO CURRENT_USER;

CREATE TABLE tenant_proof_keys (
    id         integer PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
    inner_key  bytea NOT NULL CHECK (octet_length(inner_key) = 32),
    outer_key  bytea NOT NULL CHECK (octet_length(outer_key) = 32),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    retired_at timestamptz
);
REVOKE ALL ON tenant_proof_keys FROM PUBLIC;
GRANT SELECT ON tenant_proof_keys TO sessionvault_proofs;

-- 32 random bytes from the server's strong random source (gen_random_uuid: pg_strong_random).
CREATE FUNCTION sessionvault_random_key() RETURNS bytea
LANGUAGE sql VOLATILE
SET search_path = pg_catalog
AS $$
    SELECT sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8'))
$$;
REVOKE ALL ON FUNCTION sessionvault_random_key() FROM PUBLIC;

INSERT INTO tenant_proof_keys (inner_key, outer_key) VALUES (sessionvault_random_key(), sessionvault_random_key());

-- A proof for p_tenant under the newest key, for 60 s (p_ttl_s: the owner's tests mint one
-- already expired; the functions that mint for a call never pass it).
CREATE FUNCTION sessionvault_mint_proof(p_tenant uuid, p_ttl_s integer DEFAULT 60) RETURNS text
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    WITH k AS (
        SELECT id, inner_key, outer_key FROM public.tenant_proof_keys
        WHERE retired_at IS NULL ORDER BY id DESC LIMIT 1
    ),
    p AS (
        SELECT k.*, 'p1.' || p_tenant::text || '.' || (extract(epoch FROM clock_timestamp())::bigint + p_ttl_s)::text
                    || '.' || k.id::text AS payload
        FROM k
    )
    SELECT payload || '.' || encode(sha256(outer_key || sha256(inner_key || convert_to(payload, 'UTF8'))), 'hex')
    FROM p
$$;

-- The tenant of this statement's transaction, as RLS and every definer function read it.
CREATE OR REPLACE FUNCTION app_current_user_id() RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT CASE
        WHEN p.proof THEN (
            SELECT p.tenant FROM public.tenant_proof_keys k
            WHERE k.id = p.key_id
              AND (k.retired_at IS NULL OR k.retired_at > now() - interval '2 minutes')
              AND p.expiry >= extract(epoch FROM now())
              AND encode(sha256(k.outer_key || sha256(k.inner_key || convert_to(p.payload, 'UTF8'))), 'hex') = p.mac)
        -- A plain id: only a job's role (admin, maintenance, the owner) may name a tenant so.
        WHEN p.plain AND session_user <> 'sessionvault_app' THEN p.v::uuid
    END
    FROM (
        -- Every cast guarded by the shape it needs: a malformed setting is no tenant, not an error.
        SELECT v, proof, plain,
               CASE WHEN proof THEN split_part(v, '.', 2)::uuid END AS tenant,
               CASE WHEN proof THEN split_part(v, '.', 3)::bigint END AS expiry,
               CASE WHEN proof THEN split_part(v, '.', 4)::integer END AS key_id,
               CASE WHEN proof THEN left(v, -65) END AS payload,
               CASE WHEN proof THEN split_part(v, '.', 5) END AS mac
        FROM (
            SELECT v,
                   coalesce(v ~ '^p1\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[0-9]{1,12}\.[0-9]{1,9}\.[0-9a-f]{64}$', false) AS proof,
                   coalesce(v ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', false) AS plain
            FROM (SELECT nullif(current_setting('app.user_id', true), '') AS v) AS setting
        ) AS shape
    ) AS p
$$;

-- Every policy asks for the tenant once per statement, not once per row: the call wrapped in a
-- scalar subquery is an InitPlan (the verification is a key lookup and two hashes). Rewritten
-- from the catalog, so every policy that calls the function is covered, whichever migration
-- made it.
DO $$
DECLARE
    pol record;
    v_using text;
    v_check text;
BEGIN
    FOR pol IN
        SELECT schemaname, tablename, policyname, qual, with_check FROM pg_policies
        WHERE schemaname = 'public'
          AND (qual LIKE '%app_current_user_id()%' OR with_check LIKE '%app_current_user_id()%')
    LOOP
        v_using := replace(pol.qual, 'app_current_user_id()', '(SELECT app_current_user_id())');
        v_check := replace(pol.with_check, 'app_current_user_id()', '(SELECT app_current_user_id())');
        IF v_using IS NOT NULL THEN
            EXECUTE format('ALTER POLICY %I ON %I.%I USING (%s)', pol.policyname, pol.schemaname, pol.tablename, v_using);
        END IF;
        IF v_check IS NOT NULL THEN
            EXECUTE format('ALTER POLICY %I ON %I.%I WITH CHECK (%s)', pol.policyname, pol.schemaname, pol.tablename, v_check);
        END IF;
    END LOOP;
END $$;

-- The admission's tenant: the caller the key (or token) hash names, as a proof; nothing when it
-- names no usable credential. Callable by the serving role: without a valid key's hash it sets
-- no tenant.
CREATE FUNCTION sessionvault_enter_key_tenant(p_key_hash bytea, p_resource text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    k record;
BEGIN
    SELECT * INTO k FROM public.sessionvault_key(p_key_hash, p_resource);
    PERFORM set_config('app.user_id',
                       CASE WHEN k.status = 'ok' THEN sessionvault_mint_proof(k.user_id) ELSE '' END, true);
END $$;

-- A new proof key (the old one stays valid 2 minutes for proofs already minted); keys retired a
-- day ago are dropped. For the owner and the admin role (`admin rotate_proof_key`).
CREATE FUNCTION sessionvault_rotate_proof_key() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_id integer;
BEGIN
    DELETE FROM public.tenant_proof_keys WHERE retired_at < clock_timestamp() - interval '1 day';
    UPDATE public.tenant_proof_keys SET retired_at = clock_timestamp() WHERE retired_at IS NULL;
    INSERT INTO public.tenant_proof_keys (inner_key, outer_key)
    VALUES (sessionvault_random_key(), sessionvault_random_key()) RETURNING id INTO v_id;
    RETURN v_id;
END $$;

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

    PERFORM sessionvault_enter_key_tenant(p_key_hash, p_resource);  -- a proof, not the id
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


-- Ownership: the proof functions belong to sessionvault_proofs, which alone reads the keys.
GRANT sessionvault_proofs TO CURRENT_USER;
GRANT CREATE ON SCHEMA public TO sessionvault_proofs;
GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_proof_keys TO sessionvault_proofs;
GRANT EXECUTE ON FUNCTION sessionvault_random_key() TO sessionvault_proofs;
GRANT EXECUTE ON FUNCTION sessionvault_key(bytea, text) TO sessionvault_proofs;
ALTER FUNCTION sessionvault_mint_proof(uuid, integer) OWNER TO sessionvault_proofs;
ALTER FUNCTION app_current_user_id() OWNER TO sessionvault_proofs;
ALTER FUNCTION sessionvault_enter_key_tenant(bytea, text) OWNER TO sessionvault_proofs;
ALTER FUNCTION sessionvault_rotate_proof_key() OWNER TO sessionvault_proofs;
REVOKE CREATE ON SCHEMA public FROM sessionvault_proofs;

REVOKE ALL ON FUNCTION sessionvault_mint_proof(uuid, integer), sessionvault_rotate_proof_key() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_mint_proof(uuid, integer) TO sessionvault_spaces;
GRANT EXECUTE ON FUNCTION sessionvault_rotate_proof_key() TO sessionvault_admin;
REVOKE ALL ON FUNCTION sessionvault_enter_key_tenant(bytea, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_enter_key_tenant(bytea, text) TO sessionvault_app;
GRANT EXECUTE ON FUNCTION app_current_user_id() TO PUBLIC;
REVOKE sessionvault_proofs FROM CURRENT_USER;
REVOKE sessionvault_spaces FROM CURRENT_USER;
REVOKE sessionvault_oauth FROM CURRENT_USER;
