-- One budget's sliding windows, as row security shows its counters to the caller: the hits of
-- the last minute and of the last day, and the seconds until each window's oldest counted slot
-- leaves it (NULL when the window is empty). sessionvault_charge counts a person's budget with
-- it, sessionvault_enter_workspace a workspace's. A plain SQL function without SET or SECURITY
-- DEFINER, so that the planner inlines it into its callers' statement.
CREATE OR REPLACE FUNCTION sessionvault_rate_window(p_user_id uuid, p_budget text, p_now timestamptz)
RETURNS TABLE (used_minute integer, used_day integer, minute_free integer, day_free integer)
LANGUAGE sql STABLE
AS $$
    SELECT
        coalesce(sum(c.hits) FILTER (WHERE c.span = 'minute' AND c.slot > p_now - interval '1 minute'), 0)::integer,
        coalesce(sum(c.hits) FILTER (WHERE c.span = 'day'), 0)::integer,
        ceil(EXTRACT(EPOCH FROM min(c.slot) FILTER (
            WHERE c.span = 'minute' AND c.slot > p_now - interval '1 minute')
            + interval '1 minute' - p_now))::integer,
        ceil(EXTRACT(EPOCH FROM min(c.slot) FILTER (WHERE c.span = 'day') + interval '1 day' - p_now))::integer
    FROM public.rate_counters c
    WHERE c.user_id = p_user_id AND c.budget = p_budget AND c.slot > p_now - interval '1 day'
$$;

REVOKE ALL ON FUNCTION sessionvault_rate_window(uuid,text,timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_rate_window(uuid,text,timestamptz) TO sessionvault_app, sessionvault_spaces;
