-- A new proof key (the old one stays valid 2 minutes for proofs already minted); keys retired a
-- day ago are dropped. For the owner and the admin role (`admin rotate_proof_key`).
CREATE OR REPLACE FUNCTION sessionvault_rotate_proof_key() RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_id integer;
BEGIN
    DELETE FROM public.tenant_proof_keys WHERE retired_at < clock_timestamp() - interval '1 day';
    UPDATE public.tenant_proof_keys SET retired_at = clock_timestamp() WHERE retired_at IS NULL;
    INSERT INTO public.tenant_proof_keys (inner_key, outer_key)
    VALUES (sessionvault_random_key(), sessionvault_random_key()) RETURNING id INTO v_id;
    RETURN v_id;
END $$;

ALTER FUNCTION sessionvault_rotate_proof_key() OWNER TO sessionvault_proofs;
REVOKE ALL ON FUNCTION sessionvault_rotate_proof_key() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_rotate_proof_key() TO sessionvault_admin;
