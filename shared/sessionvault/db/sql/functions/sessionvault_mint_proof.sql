-- A proof for p_tenant under the newest key, for 60 s (p_ttl_s: the owner's tests mint one
-- already expired; the functions that mint for a call never pass it). PL/pgSQL, not SQL: its
-- statement is planned once per connection, not on every call.
CREATE OR REPLACE FUNCTION sessionvault_mint_proof(p_tenant uuid, p_ttl_s integer DEFAULT 60) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    k record;
    v_payload text;
BEGIN
    SELECT id, inner_key, outer_key INTO k FROM public.tenant_proof_keys
    WHERE retired_at IS NULL ORDER BY id DESC LIMIT 1;
    v_payload := 'p1.' || p_tenant::text || '.' || (extract(epoch FROM clock_timestamp())::bigint + p_ttl_s)::text
                 || '.' || k.id::text;
    RETURN v_payload || '.' || encode(sha256(k.outer_key || sha256(k.inner_key || convert_to(v_payload, 'UTF8'))), 'hex');
END $$;

ALTER FUNCTION sessionvault_mint_proof(uuid,integer) OWNER TO sessionvault_proofs;
REVOKE ALL ON FUNCTION sessionvault_mint_proof(uuid,integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_mint_proof(uuid,integer) TO sessionvault_spaces;
