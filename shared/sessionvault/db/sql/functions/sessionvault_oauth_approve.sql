-- The owner approves a pending request with one of their API keys (its hash): one code, with at
-- most that key's scopes. A bad key leaves the request open (the page asks again) and counts as
-- a failed authentication. status: ok | unknown_request | bad_key | no_scope.
CREATE OR REPLACE FUNCTION sessionvault_oauth_approve(p_request_id text, p_key_hash bytea, p_code_hash bytea)
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

ALTER FUNCTION sessionvault_oauth_approve(text,bytea,bytea) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_approve(text,bytea,bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_approve(text,bytea,bytea) TO sessionvault_app;
