-- The owner said no: the request is closed; where to send the browser.
CREATE OR REPLACE FUNCTION sessionvault_oauth_deny(p_request_id text)
RETURNS TABLE (redirect_uri text, state text)
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    UPDATE public.oauth_requests SET used_at = clock_timestamp()
    WHERE id = p_request_id AND used_at IS NULL AND expires_at > clock_timestamp()
    RETURNING redirect_uri, state
$$;

ALTER FUNCTION sessionvault_oauth_deny(text) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_deny(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_deny(text) TO sessionvault_app;
