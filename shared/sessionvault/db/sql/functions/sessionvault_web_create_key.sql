-- A new key for the user of the live key p_key_hash, if that key has the delete scope: the new
-- key's SHA-256 and display prefix (the key itself never reaches the database), its label and
-- scopes, which must be known ones, at least one, and among the signing-in key's own (no key
-- can make a stronger one). At most 100 live keys per user (a stolen sign-in cannot mint keys
-- without end). created | unknown_key | scope | invalid | too_many.
CREATE OR REPLACE FUNCTION sessionvault_web_create_key(
    p_key_hash bytea, p_new_hash bytea, p_prefix text, p_label text, p_scopes text[]
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_user uuid;
    v_scopes text[];
BEGIN
    SELECT c.caller, c.scopes INTO v_user, v_scopes FROM public.sessionvault_web_caller(p_key_hash, NULL) c;
    IF v_user IS NULL THEN
        RETURN 'unknown_key';
    END IF;
    IF NOT ('delete' = ANY (v_scopes)) OR NOT (p_scopes <@ v_scopes) THEN
        RETURN 'scope';
    END IF;
    IF cardinality(p_scopes) = 0
        OR NOT (p_scopes <@ ARRAY['read', 'write', 'delete', 'checkpoint'])
        OR octet_length(p_new_hash) <> 32
        OR char_length(p_label) > 200
    THEN
        RETURN 'invalid';
    END IF;
    IF (SELECT count(*) FROM public.api_keys WHERE user_id = v_user AND revoked_at IS NULL) >= 100 THEN
        RETURN 'too_many';
    END IF;
    INSERT INTO public.api_keys (user_id, key_hash, key_prefix, label, scopes)
    VALUES (v_user, p_new_hash, p_prefix, p_label, p_scopes);
    RETURN 'created';
END;
$$;

ALTER FUNCTION sessionvault_web_create_key(bytea,bytea,text,text,text[]) OWNER TO sessionvault_web;
REVOKE ALL ON FUNCTION sessionvault_web_create_key(bytea,bytea,text,text,text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_web_create_key(bytea,bytea,text,text,text[]) TO sessionvault_app;
