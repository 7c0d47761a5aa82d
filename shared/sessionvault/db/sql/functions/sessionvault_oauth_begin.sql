-- A pending request; a client may hold at most p_per_client live ones.
CREATE OR REPLACE FUNCTION sessionvault_oauth_begin(
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

ALTER FUNCTION sessionvault_oauth_begin(text,text,text,text,text,text[],text,integer) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_begin(text,text,text,text,text,text[],text,integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_begin(text,text,text,text,text,text[],text,integer) TO sessionvault_app;
