-- Keywords without plaintext (issue 36, item 2): the terms a session can be found by, stored as
-- keyed tokens. Each term of a head's text (core/terms.py: identifiers whole and split, paths,
-- error codes, ticket ids, words) becomes 16 bytes of HMAC under a key derived from the space's
-- data key and bound to the space (core/crypto.term_key): the database can index and match the
-- tokens a query brings, and learns only which sessions of one space share a term and how often
-- it occurs in each (docs/security.md, "What a database reader sees"). Only the head version's
-- terms are kept: search finds heads.
--
-- sessions.terms_indexed: NULL until the head's terms are written (a save writes them in its
-- own flight; heads saved before this migration get theirs from the maintenance task that
-- re-embeds, which can open them).
CREATE TABLE session_terms (
    session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token      bytea NOT NULL CHECK (octet_length(token) = 16),
    tf         smallint NOT NULL CHECK (tf > 0)
);
CREATE INDEX session_terms_match ON session_terms (user_id, token) INCLUDE (session_id, tf);
CREATE INDEX session_terms_session ON session_terms (session_id);
ALTER TABLE sessions ADD COLUMN terms_indexed boolean;

ALTER TABLE session_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE session_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY session_terms_tenant ON session_terms
    USING (user_id = (SELECT app_current_user_id())) WITH CHECK (user_id = (SELECT app_current_user_id()));

GRANT SELECT, INSERT, DELETE ON session_terms TO sessionvault_app, sessionvault_admin, sessionvault_maint;
GRANT UPDATE (terms_indexed) ON sessions TO sessionvault_maint;
