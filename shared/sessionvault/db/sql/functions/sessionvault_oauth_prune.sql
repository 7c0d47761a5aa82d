-- Housekeeping (the maintenance task): expired requests, codes and tokens, and clients nobody
-- approved within a day of registering. Refresh tokens outlive their access tokens, so a
-- family goes when its last token has expired.
CREATE OR REPLACE FUNCTION sessionvault_oauth_prune() RETURNS TABLE (what text, deleted bigint)
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

ALTER FUNCTION sessionvault_oauth_prune() OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_prune() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_prune() TO sessionvault_admin, sessionvault_maint;
