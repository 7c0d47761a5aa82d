-- One table's upkeep, for the maintenance task: the partitions from the current step through
-- now() + p_ahead made; every partition whose whole range is older than now() - p_keep
-- detached (its rows counted as the catalog last estimated them); the default partition's
-- rows older than that deleted. A detach or attach that cannot get its lock within a second
-- gives up on that partition ('busy') rather than hold the serving path up behind it; the
-- next run takes it. The detached tables are dropped by sessionvault_partitions_drop, in a
-- transaction of its own that holds no lock on the parent.
CREATE OR REPLACE FUNCTION sessionvault_partitions_prune(p_table text, p_keep interval, p_ahead interval)
RETURNS TABLE (created integer, detached integer, detached_rows bigint, deleted bigint, busy integer)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
SET TimeZone = 'UTC'
SET DateStyle = 'ISO, YMD'
SET lock_timeout = '1s'
AS $$
#variable_conflict use_column
DECLARE
    p record;
    r record;
    v_now timestamptz := clock_timestamp();
    v_cut timestamptz;
    v_at timestamptz;
    v_floor interval;
    v_parent regclass;
BEGIN
    SELECT * INTO p FROM sessionvault_partitioning(p_table);
    IF p.col IS NULL THEN
        RAISE EXCEPTION 'no partitioning for table %', p_table USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The day window reads 24 one-hour slots: its counters must outlive it.
    v_floor := CASE WHEN p_table = 'rate_counters' THEN interval '1 day 1 hour' ELSE interval '1 day' END;
    IF p_keep < v_floor OR p_ahead < interval '0' OR p_ahead > interval '90 days' THEN
        RAISE EXCEPTION 'retention % or lead % out of range for %', p_keep, p_ahead, p_table
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('sessionvault_partitions/' || p_table, 0));
    v_parent := format('public.%I', p_table)::regclass;
    v_cut := v_now - p_keep;
    created := 0; detached := 0; detached_rows := 0; deleted := 0; busy := 0;

    v_at := date_trunc(p.step, v_now);
    WHILE v_at <= v_now + p_ahead LOOP
        BEGIN
            created := created + sessionvault_partition_add(p_table, v_at)::integer;
        EXCEPTION WHEN lock_not_available THEN
            busy := busy + 1;
        END;
        v_at := v_at + ('1 ' || p.step)::interval;
    END LOOP;

    FOR r IN
        SELECT c.relname, c.reltuples,
               substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']+)''\)')::timestamptz AS hi
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = v_parent AND c.relname ~ ('^' || p_table || '_p[0-9]{8}$')
        ORDER BY c.relname
    LOOP
        CONTINUE WHEN r.hi IS NULL OR r.hi > v_cut;
        BEGIN
            EXECUTE format('ALTER TABLE public.%I DETACH PARTITION public.%I', p_table, r.relname);
            detached := detached + 1;
            detached_rows := detached_rows + greatest(r.reltuples, 0)::bigint;
        EXCEPTION WHEN lock_not_available THEN
            busy := busy + 1;
        END;
    END LOOP;

    EXECUTE format('DELETE FROM public.%I WHERE %I < $1', p_table || '_default', p.col) USING v_cut;
    GET DIAGNOSTICS deleted = ROW_COUNT;
    RETURN NEXT;
END $$;

REVOKE ALL ON FUNCTION sessionvault_partitions_prune(text,interval,interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_partitions_prune(text,interval,interval) TO sessionvault_admin, sessionvault_maint;
