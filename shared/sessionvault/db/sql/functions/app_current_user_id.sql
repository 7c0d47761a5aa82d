-- The tenant of this statement's transaction, as RLS and every definer function read it.
CREATE OR REPLACE FUNCTION app_current_user_id() RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT CASE
        WHEN p.proof THEN (
            SELECT p.tenant FROM public.tenant_proof_keys k
            WHERE k.id = p.key_id
              AND (k.retired_at IS NULL OR k.retired_at > now() - interval '2 minutes')
              AND p.expiry >= extract(epoch FROM now())
              AND encode(sha256(k.outer_key || sha256(k.inner_key || convert_to(p.payload, 'UTF8'))), 'hex') = p.mac)
        -- A plain id: only a job's role (admin, maintenance, the owner) may name a tenant so.
        WHEN p.plain AND session_user <> 'sessionvault_app' THEN p.v::uuid
    END
    FROM (
        -- Every cast guarded by the shape it needs: a malformed setting is no tenant, not an error.
        SELECT v, proof, plain,
               CASE WHEN proof THEN split_part(v, '.', 2)::uuid END AS tenant,
               CASE WHEN proof THEN split_part(v, '.', 3)::bigint END AS expiry,
               CASE WHEN proof THEN split_part(v, '.', 4)::integer END AS key_id,
               CASE WHEN proof THEN left(v, -65) END AS payload,
               CASE WHEN proof THEN split_part(v, '.', 5) END AS mac
        FROM (
            SELECT v,
                   coalesce(v ~ '^p1\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.[0-9]{1,12}\.[0-9]{1,9}\.[0-9a-f]{64}$', false) AS proof,
                   coalesce(v ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$', false) AS plain
            FROM (SELECT nullif(current_setting('app.user_id', true), '') AS v) AS setting
        ) AS shape
    ) AS p
$$;

ALTER FUNCTION app_current_user_id() OWNER TO sessionvault_proofs;
GRANT EXECUTE ON FUNCTION app_current_user_id() TO PUBLIC;
