-- Drop the partitions the prune detached (tables of ours, by name, no longer attached).
-- Dropping a detached table locks only that table: the files go without holding the parent.
CREATE OR REPLACE FUNCTION sessionvault_partitions_drop() RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
SET lock_timeout = '1s'
AS $$
DECLARE
    r record;
    v_dropped integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('sessionvault_partitions/drop', 0));
    FOR r IN
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'r' AND NOT c.relispartition
          AND c.relname ~ '^(audit_events|workspace_access|rate_counters|auth_failures)_p[0-9]{8}$'
        ORDER BY c.relname
    LOOP
        BEGIN
            EXECUTE format('DROP TABLE IF EXISTS public.%I', r.relname);
            v_dropped := v_dropped + 1;
        EXCEPTION WHEN lock_not_available THEN
            NULL;  -- in use: the next run drops it
        END;
    END LOOP;
    RETURN v_dropped;
END $$;

REVOKE ALL ON FUNCTION sessionvault_partitions_drop() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_partitions_drop() TO sessionvault_admin, sessionvault_maint;
