-- The newest open offer the caller may claim in any of its workspaces (as owner or member):
-- offered to anyone or to this person, to any client or to p_client. Which workspace, and when.
CREATE OR REPLACE FUNCTION sessionvault_newest_offer_elsewhere(p_repo text, p_client text)
RETURNS TABLE (space uuid, name text, offered_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT h.user_id, w.name, h.offered_at
    FROM public.handoffs h
    JOIN public.workspace_members m
      ON m.workspace_id = h.user_id AND m.user_id = app_current_user_id() AND m.role IN ('owner', 'member')
    JOIN public.users w ON w.id = h.user_id
    WHERE (p_repo = '' OR h.repo = p_repo)
      AND (h.to_client = '' OR h.to_client = p_client)
      AND (h.to_user IS NULL OR h.to_user = app_current_user_id())
      AND h.accepted_at IS NULL AND h.superseded_at IS NULL AND h.expires_at > clock_timestamp()
    ORDER BY h.offered_at DESC
    LIMIT 1
$$;

ALTER FUNCTION sessionvault_newest_offer_elsewhere(text,text) OWNER TO sessionvault_spaces;
REVOKE ALL ON FUNCTION sessionvault_newest_offer_elsewhere(text,text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_newest_offer_elsewhere(text,text) TO sessionvault_app;
