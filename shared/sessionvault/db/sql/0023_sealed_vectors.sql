-- No vector in the clear (issue 36, item 1). A head's vector is text in other words, so it is
-- now stored sealed under the space's data key (core/vectors.py, core/crypto.vector_aad) in
-- `sealed_vector`, and a space's vectors are also kept packed in sealed segments
-- (`vector_segments`) that a search opens once per process and scores in memory.
--
-- `vector_seq` orders the changes to heads' vectors: a save, a re-embed and the sealing task
-- draw it (under the space's usage-row lock, which a compaction holds too, so a change is
-- never both newer than the segments and invisible to the compaction that wrote them). A
-- search opens the segments (cached) and the "delta": the heads whose `vector_seq` is past the
-- segments' `through_seq`; a head in the delta replaces its segment row.
--
-- The plaintext `embedding` column stays for the move: a migration cannot seal (the data keys
-- are not in the database), so the `seal_vectors` task seals each head's plaintext vector and
-- empties the column; until then a search reads such a head's vector as the delta. Downgrade:
-- an older server finds no vector in `embedding` and its `reembed` task embeds every head
-- again, in the clear (docs/security.md).
ALTER TABLE sessions ADD COLUMN sealed_vector bytea, ADD COLUMN vector_seq bigint;
CREATE SEQUENCE session_vector_seq;
CREATE INDEX sessions_vector_delta ON sessions (user_id, vector_seq);
CREATE INDEX sessions_plaintext_vectors ON sessions (user_id) WHERE embedding IS NOT NULL AND sealed_vector IS NULL;

CREATE TABLE vector_segments (
    id          uuid PRIMARY KEY,
    user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    model       text NOT NULL,
    rows        integer NOT NULL,
    through_seq bigint NOT NULL,
    nonce       bytea NOT NULL,
    ciphertext  bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX vector_segments_space ON vector_segments (user_id, model);
ALTER TABLE vector_segments ENABLE ROW LEVEL SECURITY;
ALTER TABLE vector_segments FORCE ROW LEVEL SECURITY;
CREATE POLICY vector_segments_tenant ON vector_segments
    USING (user_id = (SELECT app_current_user_id())) WITH CHECK (user_id = (SELECT app_current_user_id()));

GRANT SELECT, INSERT, DELETE ON vector_segments TO sessionvault_app, sessionvault_admin, sessionvault_maint;
GRANT USAGE ON SEQUENCE session_vector_seq TO sessionvault_app, sessionvault_admin, sessionvault_maint;
GRANT UPDATE (sealed_vector, vector_seq) ON sessions TO sessionvault_maint;
GRANT SELECT, INSERT, UPDATE ON user_usage TO sessionvault_maint;  -- the usage-row lock (FOR UPDATE)
