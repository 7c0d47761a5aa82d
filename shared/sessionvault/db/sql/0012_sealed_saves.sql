-- A save in one flight (issue #21): each version is sealed before the insert under an id of
-- its own that the server draws (seal_id), instead of the session id and version number the
-- database assigns. The ciphertext's associated data is then (user, seal_id, name) and the
-- head's MAC covers seal_id (core/crypto.py, v2); a ciphertext or MAC moved to another row,
-- user or name still fails. The head carries its version's seal_id, which also tells the
-- statements queued after the save's upsert whether that upsert was this save's.
--
-- Versions saved before this migration keep seal_id NULL and open with the v1 associated data
-- (session id and version), as before.

ALTER TABLE session_versions ADD COLUMN seal_id uuid;
ALTER TABLE sessions ADD COLUMN seal_id uuid;
-- A seal id is stored once: a save retried after a COMMIT whose answer was lost finds its
-- version and writes nothing (db/saves.py).
CREATE UNIQUE INDEX session_versions_seal_id ON session_versions (seal_id);
