-- 32 random bytes from the server's strong random source (gen_random_uuid: pg_strong_random).
CREATE OR REPLACE FUNCTION sessionvault_random_key() RETURNS bytea
LANGUAGE sql VOLATILE
SET search_path = pg_catalog
AS $$
    SELECT sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8'))
$$;

REVOKE ALL ON FUNCTION sessionvault_random_key() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_random_key() TO sessionvault_proofs;
