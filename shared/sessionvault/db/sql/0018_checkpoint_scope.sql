-- A scope of its own for automatic checkpoints (issue 35, item 1).
--
-- checkpoint_session used to need only `write`, so any model-facing key could save auto/
-- names, and every checkpoint save prunes its siblings: a `read,write` key could destroy a
-- user's real checkpoints. Now only a key with `checkpoint` may save one; `connect --hooks`
-- and `sessionvault dev` give the hooks such a key (read,checkpoint), kept in a 0600
-- file that the hooks read, never in a client's MCP config. OAuth tokens never carry it
-- (their scopes stay read, write, delete: migration 0005).
ALTER TABLE api_keys DROP CONSTRAINT IF EXISTS api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
    CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['read', 'write', 'delete', 'checkpoint']);
