-- Store or refresh a client from its metadata document, the app having fetched and checked it.
-- A refresh (the id is already a document's) updates it; a new one counts against the hour's
-- registrations exactly like a registration (per caller address first, then server-wide). A
-- registered client's row is never touched (a registered id is a UUID, never a URL: 'conflict').
-- ok | address_cap | server_cap | conflict.
CREATE OR REPLACE FUNCTION sessionvault_oauth_document(
    p_client_id text, p_info jsonb, p_ttl_s integer, p_per_hour integer,
    p_address bytea, p_per_address integer
) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_document timestamptz;
    v_until timestamptz := clock_timestamp() + make_interval(secs => least(greatest(p_ttl_s, 60), 86400));
BEGIN
    IF left(p_client_id, 8) <> 'https://' OR length(p_client_id) > 512
       OR p_info ->> 'client_id' IS DISTINCT FROM p_client_id THEN
        RETURN 'conflict';
    END IF;
    SELECT c.document_expires_at INTO v_document
    FROM public.oauth_clients c WHERE c.client_id = p_client_id FOR UPDATE;
    IF FOUND THEN
        IF v_document IS NULL THEN
            RETURN 'conflict';
        END IF;
        UPDATE public.oauth_clients SET info = p_info, document_expires_at = v_until
        WHERE client_id = p_client_id;
        RETURN 'ok';
    END IF;
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
    INSERT INTO public.oauth_clients AS c (client_id, secret_hash, info, address, document_expires_at)
    VALUES (p_client_id, NULL, p_info, p_address, v_until)
    ON CONFLICT (client_id) DO UPDATE SET info = EXCLUDED.info, document_expires_at = EXCLUDED.document_expires_at
        WHERE c.document_expires_at IS NOT NULL;  -- a concurrent first fetch of the same document
    RETURN 'ok';
END;
$$;

ALTER FUNCTION sessionvault_oauth_document(text,jsonb,integer,integer,bytea,integer) OWNER TO sessionvault_oauth;
REVOKE ALL ON FUNCTION sessionvault_oauth_document(text,jsonb,integer,integer,bytea,integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_oauth_document(text,jsonb,integer,integer,bytea,integer) TO sessionvault_app;
