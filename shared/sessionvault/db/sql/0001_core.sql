-- Core schema: identity plane (users, api_keys) and tenant plane (sessions, session_versions,
-- rate_limit_events, audit_events). Runs as the owner role; the app role only gets DML.

CREATE EXTENSION IF NOT EXISTS vector;

-- Two roles, neither a superuser, neither BYPASSRLS, neither the owner. NOLOGIN here: local
-- mode turns LOGIN on, a cloud deploy sets passwords (docs/deploy.md).
--   sessionvault_app    the MCP server: reads keys, serves its tenant's rows, writes audit rows.
--   sessionvault_admin  the admin and maintenance functions and the CLI: manages users and
--                       keys, prunes, re-embeds; still under RLS in the tenant plane.
DO $$
DECLARE
    role text;
BEGIN
    FOREACH role IN ARRAY ARRAY['sessionvault_app', 'sessionvault_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = role) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', role);
        END IF;
    END LOOP;
END $$;

-- NULL when no tenant is set, so every policy below matches nothing: a forgotten scope fails closed.
CREATE FUNCTION app_current_user_id() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT NULLIF(current_setting('app.user_id', true), '')::uuid $$;

CREATE TABLE users (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL UNIQUE,
    dek_wrapped bytea NOT NULL,
    key_id      text NOT NULL,          -- which master key / KMS key wrapped the DEK
    disabled_at timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key_hash     bytea NOT NULL UNIQUE,  -- SHA-256 of the whole key; the key itself is never stored
    key_prefix   text NOT NULL,
    label        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_user ON api_keys (user_id);

-- One row per session name: the head version, the plaintext preview and the embedding.
CREATE TABLE sessions (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name            text NOT NULL,
    repo            text NOT NULL DEFAULT '',
    preview         text NOT NULL,
    client          text NOT NULL DEFAULT '',
    version         integer NOT NULL,
    embedding       vector,             -- dimension follows the provider, see embedding_model
    embedding_model text,
    embed_failures  smallint NOT NULL DEFAULT 0,  -- failed re-embed attempts; a save resets both
    embed_retry_at  timestamptz,                  -- back-off: not retried before this
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (user_id, name)
);
CREATE INDEX sessions_recent ON sessions (user_id, updated_at DESC);
CREATE INDEX sessions_repo_recent ON sessions (user_id, repo, updated_at DESC);
-- HNSW needs a fixed dimension: one partial expression index per supported dimension
-- (384 = all-MiniLM-L6-v2, 1536 = text-embedding-3-small).
CREATE INDEX sessions_embedding_384 ON sessions
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE vector_dims(embedding) = 384;
CREATE INDEX sessions_embedding_1536 ON sessions
    USING hnsw ((embedding::vector(1536)) vector_cosine_ops) WHERE vector_dims(embedding) = 1536;

-- Every saved version, the head included; content is AES-256-GCM ciphertext only.
CREATE TABLE session_versions (
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL,
    version    integer NOT NULL,
    nonce      bytea NOT NULL,
    ciphertext bytea NOT NULL,
    client     text NOT NULL DEFAULT '',
    saved_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, version)
);

CREATE TABLE rate_limit_events (
    user_id uuid NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX rate_limit_events_user_at ON rate_limit_events (user_id, at);
CREATE INDEX rate_limit_events_at ON rate_limit_events (at);

-- No PII: IP and user agent only as salted SHA-256, errors only as a short class.
CREATE TABLE audit_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     uuid,                   -- NULL for requests that failed authentication
    at          timestamptz NOT NULL DEFAULT now(),
    request_id  text NOT NULL DEFAULT '',
    tool        text NOT NULL,
    outcome     text NOT NULL CHECK (outcome IN ('ok', 'error')),
    error_class text CHECK (error_class IN
        ('auth', 'rate_limit', 'validation', 'db', 'provider', 'timeout', 'internal')),
    latency_ms  integer NOT NULL,
    ip_hash     bytea,
    ua_hash     bytea
);
CREATE INDEX audit_events_user_at ON audit_events (user_id, at);
CREATE INDEX audit_events_at ON audit_events (at);

-- Tenant plane: ENABLE + FORCE so even the owner is subject to the policies.
ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY sessions_tenant ON sessions
    USING (user_id = app_current_user_id()) WITH CHECK (user_id = app_current_user_id());

ALTER TABLE session_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE session_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY session_versions_tenant ON session_versions
    USING (user_id = app_current_user_id()) WITH CHECK (user_id = app_current_user_id());

ALTER TABLE rate_limit_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE rate_limit_events FORCE ROW LEVEL SECURITY;
CREATE POLICY rate_limit_events_tenant ON rate_limit_events
    USING (user_id = app_current_user_id()) WITH CHECK (user_id = app_current_user_id());

ALTER TABLE audit_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_events FORCE ROW LEVEL SECURITY;
-- A failed authentication has no tenant: its row carries a NULL user and is written, read
-- (by the retention job) and pruned with no tenant set. Such rows hold only hashes and a class.
CREATE POLICY audit_events_tenant ON audit_events
    USING (user_id IS NOT DISTINCT FROM app_current_user_id())
    WITH CHECK (user_id IS NOT DISTINCT FROM app_current_user_id());

-- A runaway query gives up (error class "timeout") well before API Gateway's 29 s. A role
-- setting, not a startup option: it survives transaction-mode poolers (Neon, RDS Proxy).
ALTER ROLE sessionvault_app SET statement_timeout = '10s';

GRANT USAGE ON SCHEMA public TO sessionvault_app, sessionvault_admin;

-- The server may read the identity plane and touch a key's last use, nothing more: a bug or an
-- injection in the serving path cannot mint users or keys, or erase the audit trail.
GRANT SELECT ON users, api_keys TO sessionvault_app;
GRANT UPDATE (last_used_at) ON api_keys TO sessionvault_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON sessions, session_versions TO sessionvault_app;
GRANT SELECT, INSERT ON rate_limit_events TO sessionvault_app;
GRANT INSERT ON audit_events TO sessionvault_app;

GRANT SELECT, INSERT, UPDATE, DELETE ON users, api_keys TO sessionvault_admin;
GRANT SELECT, INSERT, UPDATE, DELETE ON sessions, session_versions, rate_limit_events, audit_events
    TO sessionvault_admin;
