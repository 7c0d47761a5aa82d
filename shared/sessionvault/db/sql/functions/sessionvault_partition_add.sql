-- The partition of p_table for the step holding p_at, unless it exists: made as a table of its
-- own, given any rows of its range the default partition caught meanwhile, then attached.
-- ATTACH locks the parent only against schema changes (reads and writes go on) and the
-- default partition while it checks it; CREATE TABLE ... PARTITION OF would lock the parent.
CREATE OR REPLACE FUNCTION sessionvault_partition_add(p_table text, p_at timestamptz) RETURNS boolean
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

REVOKE ALL ON FUNCTION sessionvault_partition_add(text,timestamp with time zone) FROM PUBLIC;
