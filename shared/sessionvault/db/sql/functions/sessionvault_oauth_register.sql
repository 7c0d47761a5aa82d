-- Dynamic registration is unauthenticated: at most p_per_hour new clients an hour, server-wide.
-- Two caps an hour: per registrant address first (so one caller cannot use up the
-- server-wide budget every new connector needs), then server-wide. 'ok', 'address_cap' or
-- 'server_cap'.
CREATE OR REPLACE FUNCTION sessionvault_oauth_register(
    p_client_id text, p_secret_hash bytea, p_info jsonb, p_per_hour integer,
    p_address bytea, p_per_address integer
) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('sessionvault_oauth_register', 7));
    IF (SELECT count(*) FROM public.oauth_clients
        WHERE address IS NOT DISTINCT FROM p_address
          AND created_at > clock_timestamp() - interval '1 hour') >= p_per_address THEN
        PERFORM sessionvault_oauth_fail('oauth_register_address_cap');
        RETURN 'address_cap';
    END IF;
    IF (SELECT count(*) FROM public.oauth_clients
        WHERE created_at > clock_timestamp() - interval '1 hour') >= p_per_hour THEN
        PERFORM sessionvault_oauth_fail('oauth_register_cap');
        RETURN 'server_cap';
    END IF;
    INSERT INTO public.oauth_clients (client_id, secret_hash, info, address)
    VALUES (p_client_id, p_secret_hash, p_info, p_address);
    RETURN 'ok';
END;
$$;

ALTER FUNCTION sessionvault_oauth_register(text,bytea,jsonb,integer,bytea,integer) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_register(text,bytea,jsonb,integer,bytea,integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_register(text,bytea,jsonb,integer,bytea,integer) TO sessionvault_app;
