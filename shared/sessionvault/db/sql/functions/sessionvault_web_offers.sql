-- The open handoffs offered to the holder of the live key p_key_hash, newest first, across
-- their spaces: every open offer of their personal space, and in each workspace where they
-- are an owner or member (a reader cannot claim), those offered to anyone or to them. The
-- workspace's name ('' = personal), the session's name, who offered it. No content.
CREATE OR REPLACE FUNCTION sessionvault_web_offers(p_key_hash bytea, p_limit integer)
RETURNS TABLE (workspace text, name text, repo text, version integer, offered_at timestamptz,
               expires_at timestamptz, to_client text, offered_by text, to_you boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    c record;
BEGIN
    SELECT * INTO c FROM public.sessionvault_web_caller(p_key_hash, NULL);
    IF c.caller IS NULL OR NOT ('read' = ANY (c.scopes)) THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT CASE WHEN h.user_id = c.caller THEN '' ELSE w.name END, s.name, h.repo, h.version,
               h.offered_at, h.expires_at, h.to_client, f.name, h.to_user IS NOT NULL
        FROM public.handoffs h
        JOIN public.sessions s ON s.id = h.session_id
        JOIN public.users w ON w.id = h.user_id
        LEFT JOIN public.users f ON f.id = h.from_user
        WHERE h.accepted_at IS NULL AND h.superseded_at IS NULL AND h.expires_at > clock_timestamp()
          AND (h.user_id = c.caller
               OR ((h.to_user IS NULL OR h.to_user = c.caller) AND EXISTS (
                   SELECT 1 FROM public.workspace_members m
                   WHERE m.workspace_id = h.user_id AND m.user_id = c.caller
                     AND m.role IN ('owner', 'member'))))
        ORDER BY h.offered_at DESC
        LIMIT greatest(least(p_limit, 500), 0);
END $$;

ALTER FUNCTION sessionvault_web_offers(bytea,integer) OWNER TO sessionvault_web_spaces;
REVOKE ALL ON FUNCTION sessionvault_web_offers(bytea,integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sessionvault_web_offers(bytea,integer) TO sessionvault_app;
