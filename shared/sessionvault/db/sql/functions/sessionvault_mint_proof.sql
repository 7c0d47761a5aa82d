-- A proof for p_tenant under the newest key, for 60 s (p_ttl_s: the owner's tests mint one
-- already expired; the functions that mint for a call never pass it).
CREATE OR REPLACE FUNCTION sessionvault_mint_proof(p_tenant uuid, p_ttl_s integer DEFAULT 60) RETURNS text
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    WITH k AS (
        SELECT id, inner_key, outer_key FROM public.tenant_proof_keys
        WHERE retired_at IS NULL ORDER BY id DESC LIMIT 1
    ),
    p AS (
        SELECT k.*, 'p1.' || p_tenant::text || '.' || (extract(epoch FROM clock_timestamp())::bigint + p_ttl_s)::text
                    || '.' || k.id::text AS payload
        FROM k
    )
    SELECT payload || '.' || encode(sha256(outer_key || sha256(inner_key || convert_to(payload, 'UTF8'))), 'hex')
    FROM p
$$;

ALTER FUNCTION sessionvault_mint_proof(uuid,integer) OWNER TO sessionvault_proofs;
REVOKE ALL ON FUNCTION sessionvault_mint_proof(uuid,integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_mint_proof(uuid,integer) TO sessionvault_spaces;
