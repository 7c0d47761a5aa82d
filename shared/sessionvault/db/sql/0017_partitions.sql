-- Tables that grow with traffic, range-partitioned by time (issue 29, item 7; docs/scaling.md).
--
-- At 10 million calls a day, pruning by DELETE is the wrong shape: every expired row is a
-- dead tuple to vacuum and an index entry to clean, all of it competing with the serving
-- path. Partitioned by time, an expired day is a table: the prune detaches it (a moment's lock
-- on the parent) and drops it (files unlinked, no parent lock). The figures decide the step:
--
--   audit_events      one row per admitted call: ~10 M rows and ~2.5 GB a day at that scale,
--                     kept 90 days by default. A day each: a month would be ~75 GB and keep
--                     up to a month past the retention; ~97 day tables cost a few index probes
--                     to the few reads that are not bounded by time.
--   workspace_access  one row per call into a workspace: the same class as the audit trail, a
--                     day each, kept as long (it was never pruned before: it now is).
--   rate_counters     two upserted rows per call (a 5-second and a 1-hour slot); the windows
--                     read the last day only. A day each: two or three live tables.
--   auth_failures     one counter row per minute and reason, whatever the traffic (at most
--                     ~10,000 rows a day). A month each: three or four live tables, kept up to
--                     a month past the retention (counters with no user in them).
--
-- Steps are UTC days and months. Each table keeps a DEFAULT partition that catches a row no
-- ranged partition takes (before the first, past the last made ahead): nothing is ever
-- refused for want of a partition, and the prune deletes its expired rows one by one.
--
-- The conversion copies every row in this migration's transaction (the tables are locked
-- meanwhile): the old table is renamed aside with its indexes and identity sequence, the new
-- one made LIKE it (columns, defaults, checks, identity), its primary key widened by the
-- partition column (a partitioned table's unique keys must hold it), its other indexes, foreign
-- keys, policies, row security and grants copied from the catalog (whatever earlier migrations
-- gave the old table, including ones written after this file was), the rows copied with their
-- ids, the identity continued after the old sequence, the old table dropped. An index on the
-- partition column alone is kept only on the default partition: the partition bounds do its
-- work elsewhere. Every function that names these tables (sessionvault_admit, _admit_as,
-- _enter_workspace, the OAuth functions) resolves them by name when it runs: none changes.
--
-- Creating, detaching and dropping partitions needs the tables' owner; the maintenance roles
-- are not it. Two SECURITY DEFINER functions, owned by the owner, do exactly that and nothing
-- else: they read no row, delete only expired rows of a default partition, touch only the
-- tables named here and refuse a retention shorter than the windows that read them.

-- Which tables, by which column, in which steps.
CREATE FUNCTION sessionvault_partitioning(p_table text, OUT col text, OUT step text)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT v.col, v.step
    FROM (VALUES ('audit_events', 'at', 'day'), ('workspace_access', 'at', 'day'),
                 ('rate_counters', 'slot', 'day'), ('auth_failures', 'slot', 'month')) AS v (t, col, step)
    WHERE v.t = p_table
$$;

-- The partition of p_table for the step holding p_at, unless it exists: made as a table of its
-- own, given any rows of its range the default partition caught meanwhile, then attached.
-- ATTACH locks the parent only against schema changes (reads and writes go on) and the
-- default partition while it checks it; CREATE TABLE ... PARTITION OF would lock the parent.
CREATE FUNCTION sessionvault_partition_add(p_table text, p_at timestamptz) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, public
SET TimeZone = 'UTC'
AS $$
DECLARE
    p record;
    v_lo timestamptz;
    v_hi timestamptz;
    v_name text;
BEGIN
    SELECT * INTO p FROM sessionvault_partitioning(p_table);
    IF p.col IS NULL THEN
        RAISE EXCEPTION 'no partitioning for table %', p_table USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lo := date_trunc(p.step, p_at);
    v_hi := v_lo + ('1 ' || p.step)::interval;
    v_name := p_table || '_p' || to_char(v_lo, 'YYYYMMDD');
    IF to_regclass(format('public.%I', v_name)) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE public.%I (LIKE public.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                   v_name, p_table);
    EXECUTE format('WITH moved AS (DELETE FROM public.%I WHERE %I >= $1 AND %I < $2 RETURNING *)'
                   ' INSERT INTO public.%I SELECT * FROM moved', p_table || '_default', p.col, p.col, v_name)
        USING v_lo, v_hi;
    EXECUTE format('ALTER TABLE public.%I ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)',
                   p_table, v_name, v_lo, v_hi);
    RETURN true;
END $$;

-- One table's upkeep, for the maintenance task: the partitions from the current step through
-- now() + p_ahead made; every partition whose whole range is older than now() - p_keep
-- detached (its rows counted as the catalog last estimated them); the default partition's
-- rows older than that deleted. A detach or attach that cannot get its lock within a second
-- gives up on that partition ('busy') rather than hold the serving path up behind it; the
-- next run takes it. The detached tables are dropped by sessionvault_partitions_drop, in a
-- transaction of its own that holds no lock on the parent.
CREATE FUNCTION sessionvault_partitions_prune(p_table text, p_keep interval, p_ahead interval)
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

-- Drop the partitions the prune detached (tables of ours, by name, no longer attached).
-- Dropping a detached table locks only that table: the files go without holding the parent.
CREATE FUNCTION sessionvault_partitions_drop() RETURNS integer
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

-- The conversion of one table (this migration only: dropped below). Returns the rows copied.
CREATE FUNCTION sessionvault_partition_convert(p_table text) RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, public
SET TimeZone = 'UTC'
AS $$
DECLARE
    p record;
    r record;
    v_oid oid := format('public.%I', p_table)::regclass;
    v_old text := p_table || '_unpartitioned';
    v_owner name;
    v_rls boolean;
    v_force boolean;
    v_pkey text;
    v_keys text[];
    v_indexes text[];
    v_fkeys text[];
    v_idcol text;
    v_seq regclass;
    v_max bigint;
    v_at timestamptz;
    v_rows bigint;
    v_stmt text;
BEGIN
    SELECT * INTO p FROM sessionvault_partitioning(p_table);
    -- What this conversion cannot carry over is refused, not dropped.
    IF EXISTS (SELECT 1 FROM pg_index WHERE indrelid = v_oid AND indisunique AND NOT indisprimary)
       OR EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = v_oid AND contype = 'x')
       OR EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = v_oid AND NOT tgisinternal)
       OR EXISTS (SELECT 1 FROM pg_rewrite WHERE ev_class = v_oid)
       OR EXISTS (SELECT 1 FROM pg_constraint WHERE confrelid = v_oid) THEN
        RAISE EXCEPTION '% has a unique index, trigger, rule or incoming foreign key this migration does not convert',
            p_table;
    END IF;

    -- What LIKE does not copy, read before anything is renamed.
    SELECT pg_get_userbyid(relowner), relrowsecurity, relforcerowsecurity INTO v_owner, v_rls, v_force
    FROM pg_class WHERE oid = v_oid;
    SELECT c.conname, array_agg(a.attname::text ORDER BY k.ord) INTO v_pkey, v_keys
    FROM pg_constraint c
    CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k (attnum, ord)
    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
    WHERE c.conrelid = v_oid AND c.contype = 'p'
    GROUP BY c.conname;
    IF NOT p.col = ANY (v_keys) THEN
        v_keys := v_keys || p.col;
    END IF;
    -- Other indexes, as they were defined (they name the table, which keeps its name); one on
    -- the partition column alone goes to the default partition only.
    SELECT array_agg(pg_get_indexdef(i.indexrelid)) INTO v_indexes
    FROM pg_index i
    WHERE i.indrelid = v_oid AND NOT i.indisprimary
      AND NOT (i.indnatts = 1 AND i.indexprs IS NULL AND i.indpred IS NULL
               AND i.indkey[0] = (SELECT attnum FROM pg_attribute WHERE attrelid = v_oid AND attname = p.col));
    SELECT array_agg(format('ALTER TABLE public.%I ADD CONSTRAINT %I %s', p_table, conname, pg_get_constraintdef(oid)))
    INTO v_fkeys
    FROM pg_constraint WHERE conrelid = v_oid AND contype = 'f';
    SELECT attname INTO v_idcol FROM pg_attribute WHERE attrelid = v_oid AND attidentity <> '' AND NOT attisdropped;
    IF v_idcol IS NOT NULL THEN
        v_seq := pg_get_serial_sequence(format('public.%I', p_table), v_idcol)::regclass;
    END IF;

    -- The old table steps aside with its index and sequence names, so the new one takes them;
    -- its owner (this role) reads past its row security from now on, not being forced to.
    EXECUTE format('ALTER TABLE public.%I RENAME TO %I', p_table, v_old);
    EXECUTE format('ALTER TABLE public.%I NO FORCE ROW LEVEL SECURITY', v_old);
    FOR r IN SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = v_oid LOOP
        EXECUTE format('ALTER INDEX public.%I RENAME TO %I', r.relname, left(r.relname, 48) || '_unpartitioned');
    END LOOP;
    IF v_seq IS NOT NULL THEN
        EXECUTE format('ALTER SEQUENCE %s RENAME TO %I', v_seq,
                       left((SELECT relname FROM pg_class WHERE oid = v_seq), 48) || '_unpartitioned');
    END IF;

    EXECUTE format('CREATE TABLE public.%I (LIKE public.%I INCLUDING ALL EXCLUDING INDEXES) PARTITION BY RANGE (%I)',
                   p_table, v_old, p.col);
    IF v_owner <> current_user THEN
        EXECUTE format('ALTER TABLE public.%I OWNER TO %I', p_table, v_owner);
    END IF;
    EXECUTE format('ALTER TABLE public.%I ADD CONSTRAINT %I PRIMARY KEY (%s)', p_table, v_pkey,
                   (SELECT string_agg(quote_ident(k), ', ') FROM unnest(v_keys) AS k));
    FOREACH v_stmt IN ARRAY coalesce(v_indexes, '{}') || coalesce(v_fkeys, '{}') LOOP
        EXECUTE v_stmt;
    END LOOP;

    -- The default partition (with the time index the prune's row deletes use); a partition
    -- for each past step that holds rows, as far back as 400 days (older rows wait in the
    -- default partition for the prune; no past step can gain rows, so gaps cost nothing);
    -- and one for each step from the current one through a week ahead.
    EXECUTE format('CREATE TABLE public.%I PARTITION OF public.%I DEFAULT', p_table || '_default', p_table);
    EXECUTE format('CREATE INDEX %I ON public.%I (%I)', p_table || '_default_' || p.col, p_table || '_default', p.col);
    FOR v_at IN EXECUTE format('SELECT DISTINCT date_trunc(%L, %I) FROM public.%I WHERE %I >= $1 AND %I < $2',
                               p.step, p.col, v_old, p.col, p.col)
        USING now() - interval '400 days', date_trunc(p.step, now())
    LOOP
        PERFORM sessionvault_partition_add(p_table, v_at);
    END LOOP;
    v_at := date_trunc(p.step, now());
    WHILE v_at <= now() + interval '7 days' LOOP
        PERFORM sessionvault_partition_add(p_table, v_at);
        v_at := v_at + ('1 ' || p.step)::interval;
    END LOOP;

    -- Every row, with its id.
    EXECUTE format('INSERT INTO public.%I OVERRIDING SYSTEM VALUE SELECT * FROM public.%I', p_table, v_old);
    GET DIAGNOSTICS v_rows = ROW_COUNT;

    -- The identity continues after the old sequence (or the largest id, were that higher).
    IF v_seq IS NOT NULL THEN
        EXECUTE format('SELECT last_value, is_called FROM %s', v_seq) INTO r;
        EXECUTE format('SELECT max(%I) FROM public.%I', v_idcol, p_table) INTO v_max;
        IF v_max IS NOT NULL AND (v_max > r.last_value OR NOT r.is_called) THEN
            PERFORM setval(pg_get_serial_sequence(format('public.%I', p_table), v_idcol), v_max, true);
        ELSE
            PERFORM setval(pg_get_serial_sequence(format('public.%I', p_table), v_idcol), r.last_value, r.is_called);
        END IF;
    END IF;

    -- Row security, policies and grants as they were (table and column grants alike).
    FOR r IN SELECT * FROM pg_policy WHERE polrelid = v_oid LOOP
        EXECUTE format('CREATE POLICY %I ON public.%I AS %s FOR %s TO %s%s%s', r.polname, p_table,
            CASE WHEN r.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
            CASE r.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE'
                          WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
            (SELECT string_agg(CASE WHEN g = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g)) END, ', ')
             FROM unnest(r.polroles) AS g),
            ' USING (' || pg_get_expr(r.polqual, v_oid) || ')',
            ' WITH CHECK (' || pg_get_expr(r.polwithcheck, v_oid) || ')');
    END LOOP;
    IF v_rls THEN
        EXECUTE format('ALTER TABLE public.%I ENABLE ROW LEVEL SECURITY', p_table);
    END IF;
    IF v_force THEN
        EXECUTE format('ALTER TABLE public.%I FORCE ROW LEVEL SECURITY', p_table);
    END IF;
    FOR r IN
        SELECT NULL::name AS col, g.grantee, g.privilege_type, g.is_grantable
        FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) AS g
        WHERE c.oid = v_oid AND g.grantee <> c.relowner
        UNION ALL
        SELECT a.attname, g.grantee, g.privilege_type, g.is_grantable
        FROM pg_attribute a CROSS JOIN LATERAL aclexplode(a.attacl) AS g
        WHERE a.attrelid = v_oid AND a.attnum > 0 AND NOT a.attisdropped
    LOOP
        EXECUTE format('GRANT %s %s ON public.%I TO %s%s', r.privilege_type,
            CASE WHEN r.col IS NULL THEN '' ELSE format('(%I)', r.col) END, p_table,
            CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(r.grantee)) END,
            CASE WHEN r.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;

    EXECUTE format('DROP TABLE public.%I', v_old);
    EXECUTE format('ANALYZE public.%I', p_table);
    RETURN v_rows;
END $$;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['audit_events', 'workspace_access', 'rate_counters', 'auth_failures'] LOOP
        RAISE NOTICE '%: % rows now partitioned', t, sessionvault_partition_convert(t);
    END LOOP;
END $$;
DROP FUNCTION sessionvault_partition_convert(text);

REVOKE ALL ON FUNCTION
    sessionvault_partitioning(text),
    sessionvault_partition_add(text, timestamptz),
    sessionvault_partitions_prune(text, interval, interval),
    sessionvault_partitions_drop()
    FROM PUBLIC;
-- The scheduled maintenance (sessionvault_maint) and the local server's upkeep (the admin role).
GRANT EXECUTE ON FUNCTION sessionvault_partitions_prune(text, interval, interval), sessionvault_partitions_drop()
    TO sessionvault_maint, sessionvault_admin;
