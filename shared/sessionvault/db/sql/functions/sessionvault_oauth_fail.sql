CREATE OR REPLACE FUNCTION sessionvault_oauth_fail(p_reason text) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    INSERT INTO public.auth_failures AS f (slot, reason, hits)
    VALUES (date_trunc('minute', clock_timestamp()), p_reason, 1)
    ON CONFLICT ON CONSTRAINT auth_failures_pkey DO UPDATE SET hits = f.hits + 1
$$;

ALTER FUNCTION sessionvault_oauth_fail(text) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_fail(text) FROM PUBLIC;
