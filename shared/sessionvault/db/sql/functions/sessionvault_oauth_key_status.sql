-- A key hash's state: the one place both the key lookup and OAuth decide "is this key usable".
CREATE OR REPLACE FUNCTION sessionvault_oauth_key_status(p_revoked timestamptz, p_disabled timestamptz)
RETURNS text LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$ SELECT CASE WHEN p_revoked IS NOT NULL THEN 'revoked_key'
                  WHEN p_disabled IS NOT NULL THEN 'disabled_user' ELSE 'ok' END $$;
