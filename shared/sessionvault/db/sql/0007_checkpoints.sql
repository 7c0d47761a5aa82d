-- Saves that change nothing add no version: a keyed digest of the record (core.crypto
-- content_digest; NULL for heads saved before this column) is compared in the upsert. A resend
-- of a spooled checkpoint, or an import of what is already there, is then free of new versions.
ALTER TABLE sessions ADD COLUMN content_digest bytea;

-- Automatic checkpoints (core/checkpoints.py: names under auto/) are pruned per repo and client
-- on every checkpoint save; this index finds one repo's, newest first.
CREATE INDEX sessions_checkpoints ON sessions (user_id, repo, updated_at DESC)
    WHERE name LIKE 'auto/%';
