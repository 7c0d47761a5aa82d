-- Which tables, by which column, in which steps.
CREATE OR REPLACE FUNCTION sessionvault_partitioning(p_table text, OUT col text, OUT step text)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT v.col, v.step
    FROM (VALUES ('audit_events', 'at', 'day'), ('workspace_access', 'at', 'day'),
                 ('rate_counters', 'slot', 'day'), ('auth_failures', 'slot', 'month')) AS v (t, col, step)
    WHERE v.t = p_table
$$;

REVOKE ALL ON FUNCTION sessionvault_partitioning(text) FROM PUBLIC;
