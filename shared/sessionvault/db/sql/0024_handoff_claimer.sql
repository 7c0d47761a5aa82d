-- Who claimed a handoff, as a person (issue 37, item 3): a claim recorded only the client's
-- name and the key's prefix, so a team saw keys where it wanted people. The claiming person's
-- id, set by the claim; shown by name in the workspace (sessionvault_member_name), kept after
-- they leave it.
ALTER TABLE handoffs ADD COLUMN accepted_user uuid;
