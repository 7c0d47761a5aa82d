-- Handoffs: a saved version offered to the next client (any, or one named client), claimed
-- at most once, and only until it expires. One row per offered version; the version's
-- history pruning or the session's deletion takes the offer with it.
CREATE TABLE handoffs (
    session_id   uuid NOT NULL,
    version      integer NOT NULL,
    user_id      uuid NOT NULL,
    repo         text NOT NULL DEFAULT '',
    from_client  text NOT NULL DEFAULT '',
    to_client    text NOT NULL DEFAULT '',    -- '' = any client may accept
    offered_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at   timestamptz NOT NULL,
    superseded_at timestamptz,                -- a newer offer for the same repo and target
    accepted_at  timestamptz,
    accepted_by  text,                        -- the accepting client's name ('' = unnamed)
    PRIMARY KEY (session_id, version),
    FOREIGN KEY (session_id, version) REFERENCES session_versions (session_id, version) ON DELETE CASCADE
);
-- The claim looks for the newest open offer of one user's repo.
CREATE INDEX handoffs_open ON handoffs (user_id, repo, offered_at DESC)
    WHERE accepted_at IS NULL AND superseded_at IS NULL;

ALTER TABLE handoffs ENABLE ROW LEVEL SECURITY;
ALTER TABLE handoffs FORCE ROW LEVEL SECURITY;
CREATE POLICY handoffs_tenant ON handoffs
    USING (user_id = app_current_user_id()) WITH CHECK (user_id = app_current_user_id());

GRANT SELECT, INSERT, UPDATE ON handoffs TO sessionvault_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON handoffs TO sessionvault_admin;
GRANT SELECT ON handoffs TO sessionvault_maint;
