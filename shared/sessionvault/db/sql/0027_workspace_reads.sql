-- Which sessions a member read in a workspace (issue 37, item 8): the trail had one row per
-- entry (who, which access, which tool, when); a read of a session's content (a load, a claim,
-- an export's versions) now adds a row naming the session (its id, never its name or text),
-- written by the statement that reads it (sessionvault_note_read, db/sql/functions/): no
-- extra round trip.
ALTER TABLE workspace_access ADD COLUMN session_id uuid;
