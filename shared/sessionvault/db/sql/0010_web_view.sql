-- The web view (server/web/, docs/web.md): a person signed in with one of their API keys sees
-- their own keys and their account's recent activity, and may revoke one of their keys.
--
-- The serving role still reads no key: the keys come through two SECURITY DEFINER functions,
-- each given the signed-in key's SHA-256, answering only for the user that key belongs to
-- (while it is live and its user enabled). They belong to a role of their own,
-- sessionvault_web (NOLOGIN, no BYPASSRLS), which may read the key columns a listing shows and
-- set revoked_at, nothing else: never a key hash out, never a key made or un-revoked.
--
-- The audit trail becomes readable to the serving role for the columns the activity page
-- shows (RLS already limits every read to the tenant the request set); it still may not
-- update or delete a row (0001, 0002).

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'sessionvault_web') THEN
        CREATE ROLE sessionvault_web NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
    END IF;
END $$;
GRANT USAGE ON SCHEMA public TO sessionvault_web;
GRANT SELECT (id, user_id, key_hash, key_prefix, label, scopes, created_at, last_used_at, revoked_at)
    ON api_keys TO sessionvault_web;
GRANT UPDATE (revoked_at) ON api_keys TO sessionvault_web;
GRANT SELECT (id, disabled_at) ON users TO sessionvault_web;

GRANT SELECT (user_id, at, tool, outcome, error_class, oauth_client_id) ON audit_events TO sessionvault_app;

-- Every key of the user whose live key hashes to p_key_hash (none for any other hash): never
-- the hash itself. `current` marks the key asked with.
CREATE FUNCTION sessionvault_web_keys(p_key_hash bytea)
RETURNS TABLE (id uuid, prefix text, label text, scopes text[], created_at timestamptz,
               last_used_at timestamptz, revoked_at timestamptz, current boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    v_user uuid;
BEGIN
    SELECT ak.user_id INTO v_user
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id
    WHERE ak.key_hash = p_key_hash AND ak.revoked_at IS NULL AND u.disabled_at IS NULL;
    IF v_user IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT k.id, k.key_prefix, k.label, k.scopes, k.created_at, k.last_used_at, k.revoked_at,
               k.key_hash = p_key_hash
        FROM public.api_keys k
        WHERE k.user_id = v_user
        ORDER BY k.created_at, k.id;
END;
$$;

-- Revoke key p_key_id, if it is a live key of the same user as the live key p_key_hash and
-- that key has the delete scope. revoked | unknown_key | scope | not_found.
CREATE FUNCTION sessionvault_web_revoke(p_key_hash bytea, p_key_id uuid)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_user uuid;
    v_scopes text[];
BEGIN
    SELECT ak.user_id, ak.scopes INTO v_user, v_scopes
    FROM public.api_keys ak JOIN public.users u ON u.id = ak.user_id
    WHERE ak.key_hash = p_key_hash AND ak.revoked_at IS NULL AND u.disabled_at IS NULL;
    IF v_user IS NULL THEN
        RETURN 'unknown_key';
    END IF;
    IF NOT ('delete' = ANY (v_scopes)) THEN
        RETURN 'scope';
    END IF;
    UPDATE public.api_keys SET revoked_at = clock_timestamp()
    WHERE id = p_key_id AND user_id = v_user AND revoked_at IS NULL;
    RETURN CASE WHEN FOUND THEN 'revoked' ELSE 'not_found' END;
END;
$$;

-- Ownership as in 0005: the definer functions belong to their NOLOGIN role; the membership the
-- owner takes to hand them over is given back last.
GRANT sessionvault_web TO CURRENT_USER;
GRANT CREATE ON SCHEMA public TO sessionvault_web;
ALTER FUNCTION sessionvault_web_keys(bytea) OWNER TO sessionvault_web;
ALTER FUNCTION sessionvault_web_revoke(bytea, uuid) OWNER TO sessionvault_web;
REVOKE CREATE ON SCHEMA public FROM sessionvault_web;
REVOKE ALL ON FUNCTION sessionvault_web_keys(bytea), sessionvault_web_revoke(bytea, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_web_keys(bytea), sessionvault_web_revoke(bytea, uuid)
    TO sessionvault_app;
REVOKE sessionvault_web FROM CURRENT_USER;
