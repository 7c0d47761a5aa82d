-- The tenant of this statement's transaction, as row security and every definer function read
-- it: the tenant a valid proof in `app.user_id` names, else NULL (every policy fails closed).
--
--   p1.<tenant uuid>.<expiry, epoch seconds>.<key id>.<mac>
--   mac = hex(sha256(outer_key || sha256(inner_key || payload)))   (payload: all before the mac)
--
-- Valid: made under a known key not retired over 2 minutes ago, not expired at the
-- transaction's start, the MAC right. The MAC is checked before any part is cast: text a
-- forger wrote is compared, never parsed, so a malformed setting is no tenant and no error,
-- without a regular expression (which cost ten times the rest: BENCHMARKS.md, "What the tenant
-- proofs cost"). A plain id is a tenant only for the job roles (admin, maintenance, the owner),
-- never for the serving role (docs/security.md). PL/pgSQL: planned once per connection; every
-- policy calls it as `(SELECT app_current_user_id())`, once per statement.
CREATE OR REPLACE FUNCTION app_current_user_id() RETURNS uuid
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v text := current_setting('app.user_id', true);
    k record;
BEGIN
    IF left(v, 3) = 'p1.' AND substr(v, length(v) - 64, 1) = '.' THEN
        SELECT inner_key, outer_key INTO k FROM public.tenant_proof_keys
        WHERE id::text = split_part(v, '.', 4)
          AND (retired_at IS NULL OR retired_at > now() - interval '2 minutes');
        IF encode(sha256(k.outer_key || sha256(k.inner_key || convert_to(left(v, -65), 'UTF8'))), 'hex')
           = right(v, 64) THEN
            -- Our own text from here on: the casts cannot fail.
            IF split_part(v, '.', 3)::bigint >= extract(epoch FROM now()) THEN
                RETURN split_part(v, '.', 2)::uuid;
            END IF;
        END IF;
    ELSIF session_user <> 'sessionvault_app'
          AND v ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        RETURN v::uuid;
    END IF;
    RETURN NULL;
END $$;

ALTER FUNCTION app_current_user_id() OWNER TO sessionvault_proofs;
GRANT EXECUTE ON FUNCTION app_current_user_id() TO PUBLIC;
