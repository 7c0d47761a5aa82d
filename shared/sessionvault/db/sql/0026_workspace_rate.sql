-- A workspace's own rate budget (issue 37, item 8): sessionvault_enter_workspace
-- (db/sql/functions/) takes the limits and charges the workspace's counters (rate_counters,
-- under the workspace's id, budget 'tool') on a call's first entry. Its old three-argument
-- form goes; its owner may now read and count the workspace's rows (row security still holds:
-- the entry has made the workspace the tenant before it counts).
DROP FUNCTION IF EXISTS sessionvault_enter_workspace(uuid, text, text);
GRANT SELECT, INSERT, UPDATE ON rate_counters TO sessionvault_spaces;
